/* stats_sink.h — the destination of the SCILAN_STATS line (stats_sink.c). */
#ifndef SCILAN_STATS_SINK_H
#define SCILAN_STATS_SINK_H

#include <stdbool.h>
#include <stddef.h>

enum sl_stats_dest {
	SL_STATS_OFF,     /* unset, "" or "0" */
	SL_STATS_DEFAULT, /* "1": stderr if it is a terminal at exit, else the runtime directory's log */
	SL_STATS_STDERR,  /* "stderr": the program's stderr, whatever it is (not a network socket) */
	SL_STATS_RUNDIR,  /* "rundir": <rundir>/stats.log, which scilan_ctl stat --exited reads */
	SL_STATS_FILE,    /* "/absolute/path": appended to that file */
	SL_STATS_BAD,     /* anything else */
};

/* The destination SCILAN_STATS=v names; a file's path into path. */
enum sl_stats_dest sl_stats_sink_parse(const char *v, char *path, size_t size);
/* At start: take SCILAN_STATS's value (a bad one is reported, and "1"
 * used).  Whether a line is wanted at exit. */
bool sl_stats_sink_init(const char *v);
/* At exit: the line, in one append, where it was asked for. */
void sl_stats_report(void);
/* <rundir>/stats.log (old: the one it replaced when full): 0, or -1 with
 * errno when there is no runtime directory. */
int sl_stats_log_path(char *path, size_t size, bool old);

#endif
