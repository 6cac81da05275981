/* cmd_demo.c — `rkmate demo` (placeholder until its module lands). */
#include "cli.h"
int rk_cmd_demo(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "rkmate demo: not available in this build yet\n");
    return CLI_FAIL;
}
