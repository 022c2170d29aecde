/* cmds.h — the `downpour` subcommands. Each takes (argc, argv) with argv[0] the
 * subcommand's name, supports --help, and returns the process exit status. */
#ifndef CLI_CMDS_H
#define CLI_CMDS_H

int cmd_cluster(int argc, char **argv);
int cmd_task(int argc, char **argv);
int cmd_local(int argc, char **argv);
int cmd_hub(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_keys(int argc, char **argv);
int cmd_lessons(int argc, char **argv);
int cmd_fork(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_completion(int argc, char **argv);

#endif
