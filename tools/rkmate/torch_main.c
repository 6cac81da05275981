/* torch_main.c — the `rkmate-torch` program: the libtorch commands of
 * rkmate (trace, run, optimize, train), run by `rkmate` with argv[1] = the command. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "torch_cli.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: rkmate-torch trace|run|optimize|train ARGS... (normally run as 'rkmate trace ...')\n");
        return CLI_BADINPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "trace")) return rk_cmd_trace(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return rk_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "optimize")) return rk_cmd_optimize(argc - 1, argv + 1);
    if (!strcmp(cmd, "train")) return rk_cmd_train(argc - 1, argv + 1);
    fprintf(stderr, "rkmate-torch: unknown command '%s' (expected trace, run, optimize or train)\n", cmd);
    return CLI_BADINPUT;
}
