/* cmd_completion.c — `downpour completion bash`: the shell completion script. It asks
 * the binary itself at each TAB (its --help, `downpour keys`), so it never lists a
 * command, flag, key or choice that this build does not have. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cmds.h"

static const char bash_script[] =
    "# bash completion for downpour: eval \"$(downpour completion bash)\" in ~/.bashrc, or save\n"
    "# the output as /usr/share/bash-completion/completions/downpour. The commands, their\n"
    "# subcommands and flags come from the binary's own --help; the scenario keys (--set KEY=)\n"
    "# and the choices of a key or flag (--mode, --set mode=) from `downpour keys`.\n"
    "_downpour_choices() {   # $1: a key (dashes or underscores): its choices, if a list\n"
    "    \"$1\" keys 2>/dev/null | awk -v k=\"${2//-/_}\" '\n"
    "        NR == 1 { rs = index($0, \"range\"); es = index($0, \"engines\"); next }\n"
    "        $1 == k { r = substr($0, rs, es - rs); sub(/ +$/, \"\", r)\n"
    "                  if (r ~ /^[a-z-]+(\\|[a-z-]+)+$/) { gsub(/\\|/, \" \", r); print r } }'\n"
    "}\n"
    "_downpour() {\n"
    "    local dp=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
    "    local cmd=${COMP_WORDS[1]} sub= words key=\n"
    "    COMPREPLY=()\n"
    "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
    "        words=$(\"$dp\" --help 2>/dev/null | awk '/^commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 } /^$/ { c = 0 }')\n"
    "        COMPREPLY=($(compgen -W \"$words --help --version\" -- \"$cur\"))\n"
    "        return\n"
    "    fi\n"
    "    # a command's own commands: trace's list, checkpoint's usage lines\n"
    "    words=$(\"$dp\" \"$cmd\" --help 2>/dev/null | awk -v c=\"$cmd\" '\n"
    "        /^commands:/ { s = 1; next } s && /^  [a-z]/ { print $1 } /^$/ { s = 0 }\n"
    "        { for (i = 1; i < NF; i++) if ($i == \"downpour\" && $(i + 1) == c && $(i + 2) ~ /^[a-z]+$/) print $(i + 2) }' | sort -u)\n"
    "    if [ -n \"$words\" ]; then\n"
    "        if [ \"$COMP_CWORD\" -eq 2 ]; then\n"
    "            COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "            return\n"
    "        fi\n"
    "        case \" $(echo $words) \" in *\" ${COMP_WORDS[2]} \"*) sub=${COMP_WORDS[2]} ;; esac\n"
    "    fi\n"
    "    # a value: --set KEY=V, --flag=V (bash splits words at \"=\"), --flag V\n"
    "    if [ \"$prev\" = \"=\" ] && [ \"$COMP_CWORD\" -ge 3 ]; then\n"
    "        key=${COMP_WORDS[COMP_CWORD-2]}\n"
    "        if [ \"${COMP_WORDS[COMP_CWORD-3]}\" != --set ]; then\n"
    "            [[ $key == --* ]] && key=${key#--} || key=\n"
    "        fi\n"
    "    elif [ \"$prev\" = --set ]; then\n"
    "        words=$(\"$dp\" keys 2>/dev/null | awk 'NR > 1 { print $1 \"=\" }')\n"
    "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "        compopt -o nospace 2>/dev/null\n"
    "        return\n"
    "    elif [[ $prev == --* ]]; then\n"
    "        key=${prev#--}\n"
    "    fi\n"
    "    if [ -n \"$key\" ]; then\n"
    "        words=$(_downpour_choices \"$dp\" \"$key\")\n"
    "        if [ -n \"$words\" ]; then\n"
    "            COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "            return\n"
    "        fi\n"
    "    fi\n"
    "    if [[ $cur == -* ]]; then\n"
    "        words=$(\"$dp\" \"$cmd\" $sub --help 2>/dev/null | grep -oE -- '--[a-zA-Z0-9][a-zA-Z0-9_-]*' | sort -u)\n"
    "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "        return\n"
    "    fi\n"
    "    compopt -o default 2>/dev/null   # anything else: a file name\n"
    "}\n"
    "complete -F _downpour downpour\n";

static void usage(FILE *f)
{
    fprintf(f, "usage: downpour completion bash\n\n"
               "Prints a bash completion script for downpour: commands, their subcommands\n"
               "and flags, scenario keys after --set, and the choices of a key or flag\n"
               "(--mode, --set mode=), each read from this binary when TAB is pressed.\n\n"
               "  eval \"$(downpour completion bash)\"      in ~/.bashrc, or\n"
               "  downpour completion bash > /usr/share/bash-completion/completions/downpour\n");
}

int cmd_completion(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "bash")) {
        fputs(bash_script, stdout);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "downpour: completion: which shell? (bash; see --help)\n");
        return 2;
    }
    if (argc == 2 && argv[1][0] != '-') {
        fprintf(stderr, "downpour: completion: no script for shell \"%s\" (bash only)\n", argv[1]);
        return 2;
    }
    return cli_unknown_usage("completion", argc > 2 && !strcmp(argv[1], "bash") ? argv[2] : argv[1], usage);
}
