/* cmd_milp.c — `rkmate milp` (placeholder until its module lands). */
#include "cli.h"
int rk_cmd_milp(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "rkmate milp: not available in this build yet\n");
    return CLI_FAIL;
}
