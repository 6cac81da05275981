/* main.c — the `rkmate` entry point: dispatches subcommands.  Commands that
 * need libtorch (trace, run, optimize) are run by the separate `rkmate-torch`
 * program so that the solver commands never load libtorch. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} command;

static const command commands[] = {
    {"simulate", rk_cmd_simulate, "replay a schedule on a chain: peak memory, time, overhead"},
    {"solve", rk_cmd_solve, "find a schedule for a chain under a memory budget"},
    {"show", rk_cmd_show, "print a chain's blocks, classes, nodes and sizes (or Graphviz)"},
    {"baseline", rk_cmd_baseline, "write the keep-all or free-asap schedule of a chain"},
    {"import-checkmate", rk_cmd_import_checkmate, "convert a Checkmate/Moccasin node-link JSON graph to a chain"},
    {"milp", rk_cmd_milp, "solve an LP/MILP in MPS format with rkmate's own solver"},
    {"demo", rk_cmd_demo, "solve a built-in example chain at a few budgets"},
};

static const char *torch_commands[] = {"trace", "run", "optimize", "train", NULL};

static void usage(FILE *f) {
    fprintf(f, "usage: rkmate COMMAND [ARGS...]\n\n"
               "Rematerialization for PyTorch training (Rockmate, ICML 2023).\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-17s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-17s %s\n", "trace", "TorchScript model -> measured chain (needs rkmate-torch)");
    fprintf(f, "  %-17s %s\n", "run", "run a schedule as a real training step (needs rkmate-torch)");
    fprintf(f, "  %-17s %s\n", "optimize", "trace + solve + run + report (needs rkmate-torch)");
    fprintf(f, "  %-17s %s\n", "train", "train many steps with a schedule and an optimizer (needs rkmate-torch)");
    fprintf(f, "\n'rkmate COMMAND --help' describes each command.  Exit codes: 0 ok, 1 failure,\n"
               "2 bad input, 3 no schedule fits the budget.\n");
}

/* Run rkmate-torch found beside this executable, then in PATH. */
static int exec_torch(int argc, char **argv) {
    (void)argc;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *dir = dirname(self);
        const char *rel[] = {"rkmate-torch",
                             "../libexec/rkmate/rkmate-torch"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            char path[PATH_MAX * 2];
            snprintf(path, sizeof path, "%s/%s", dir, rel[i]);
            if (access(path, X_OK) == 0) {
                argv[0] = path;
                execv(path, argv);
            }
        }
    }
    char *name = "rkmate-torch";
    argv[0] = name;
    execvp(name, argv);
    fprintf(stderr,
            "rkmate: '%s' needs rkmate-torch, the libtorch part of rkmate, which is not installed "
            "(build with -Dtorch=enabled and libtorch present): %s\n",
            argv[1], strerror(errno));
    return CLI_FAIL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_BADINPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("rkmate %s\n", RKMATE_VERSION_STRING);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    for (int i = 0; torch_commands[i]; i++)
        if (!strcmp(cmd, torch_commands[i]))
            return exec_torch(argc, argv);
    fprintf(stderr, "rkmate: unknown command '%s' (see 'rkmate --help')\n", cmd);
    return CLI_BADINPUT;
}
