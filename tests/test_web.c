/* test_web.c — the web server's address to share (`serve --listen 0.0.0.0:P` prints
 * "share: http://HOST:P/"): web_share_host picks the IPv4 address of an interface that
 * is up and not loopback, else the host's name. Each case runs in a forked child inside
 * a network namespace of its own, whose interfaces the test makes (so the expectation is
 * the test's, not read back through the same call), and a child that leaks the interface
 * list fails under `make asan-unit` (LeakSanitizer runs at its exit). Needs root and
 * iproute2's `ip`; without them the cases are skipped, saying why. The rest of the web
 * module is tested through `downpour serve` (tests/it_web.sh). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "web/internal.h"

enum { CHILD_OK = 0, CHILD_WRONG = 3, CHILD_NO_SETUP = 4 };

/* In the child: runs the ip(8) commands, then compares web_share_host with `want`
 * (NULL: the host's name). */
static int in_namespace(const char *const *ip_cmds, const char *want)
{
    if (unshare(CLONE_NEWNET) != 0) return CHILD_NO_SETUP;
    for (const char *const *c = ip_cmds; *c; c++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "ip %s >/dev/null 2>&1", *c);
        if (system(cmd) != 0) return CHILD_NO_SETUP;
    }
    char name[64] = "", got[64];
    if (!want) {
        if (gethostname(name, sizeof name) != 0) return CHILD_NO_SETUP;
        name[sizeof name - 1] = 0;
        want = name;
    }
    web_share_host(got, sizeof got);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "web_share_host: \"%s\", expected \"%s\"\n", got, want);
        return CHILD_WRONG;
    }
    return CHILD_OK;
}

/* One case in a forked child; returns its exit status, -1 when it did not exit. */
static int run_case(const char *const *ip_cmds, const char *want)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) exit(in_namespace(ip_cmds, want));   /* exit(): LeakSanitizer runs */
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static void check_case(const char *what, const char *const *ip_cmds, const char *want)
{
    int rc = run_case(ip_cmds, want);
    if (rc == CHILD_NO_SETUP) {
        CHECK_SKIP("web_share_host, %s: cannot make a network namespace with it here "
                   "(needs root, iproute2's ip and veth)", what);
        return;
    }
    CHECK_MSG(rc == CHILD_OK, "web_share_host, %s: child status %d", what, rc);
}

int main(void)
{
    /* lo alone is up: nothing to share but the host's name. */
    const char *lo_only[] = {"link set lo up", NULL};
    check_case("loopback alone up", lo_only, NULL);
    /* An interface that is down is passed over; the first up one is shared. */
    const char *two[] = {"link set lo up", "link add dpdown type veth peer name dpdown1",
                         "addr add 10.213.7.1/24 dev dpdown",
                         "link add dpup type veth peer name dpup1",
                         "addr add 10.213.8.9/24 dev dpup", "link set dpup up", NULL};
    check_case("one interface down, one up", two, "10.213.8.9");
    return CHECK_DONE();
}
