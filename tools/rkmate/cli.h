/* cli.h — what every `rkmate` subcommand shares: the command signature,
 * error reporting and exit codes, and small parsing helpers.  Only the CLI
 * prints and exits; the library returns rk_status with an rk_error. */
#ifndef RK_CLI_H
#define RK_CLI_H

#include <stdio.h>
#include <stdint.h>
#include "rk_graph.h"

/* Exit codes: 0 success, 1 failure that is not the input's fault, 2 bad
 * input (file, value, option), 3 infeasible (no schedule fits the budget). */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_BADINPUT = 2, CLI_INFEASIBLE = 3 };

/* Map a library status to an exit code. */
int cli_exit_code(rk_status st);
/* Print "rkmate CMD: MSG" to stderr and return the exit code for st. */
int cli_report(const char *cmd, rk_status st, const rk_error *err);
/* Print "rkmate CMD: " + printf text to stderr; returns CLI_BADINPUT. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Parse helpers: on failure print a message naming the option and return
 * nonzero. */
int cli_parse_int(const char *cmd, const char *opt, const char *text, long lo, long hi, long *out);
int cli_parse_double(const char *cmd, const char *opt, const char *text, double lo, double hi, double *out);
int cli_parse_bytes(const char *cmd, const char *opt, const char *text, int64_t *out);

/* Nonzero when paths a and b name the same existing file. */
int cli_same_file(const char *a, const char *b);
/* Refuse (message, nonzero) when `out` is one of the `n` input paths. */
int cli_check_output(const char *cmd, const char *out, const char *const *inputs, int n);

/* True when stderr is a terminal and progress lines may be shown. */
int cli_progress_wanted(int quiet);

/* Every subcommand: int rk_cmd_NAME(int argc, char **argv), argv[0] = NAME. */
int rk_cmd_simulate(int argc, char **argv);
int rk_cmd_show(int argc, char **argv);
int rk_cmd_import_checkmate(int argc, char **argv);
int rk_cmd_baseline(int argc, char **argv);
int rk_cmd_milp(int argc, char **argv);
int rk_cmd_solve(int argc, char **argv);
int rk_cmd_demo(int argc, char **argv);

#endif
