/* log.h — scilan's diagnostics: leveled messages on stderr (never stdout). */
#ifndef SCILAN_LOG_H
#define SCILAN_LOG_H

#include <stdbool.h>

/* NOTICE, the default: what the user should know once (fallback.c's first
 * connection per reason), never once per connection. */
enum sl_log_level { SL_LOG_ERROR, SL_LOG_WARN, SL_LOG_NOTICE, SL_LOG_INFO, SL_LOG_DEBUG };
/* Their names, as SCILAN_LOG takes them. */
extern const char *const sl_log_level_names[SL_LOG_DEBUG + 1];

void sl_log(enum sl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sl_log_set_level(enum sl_log_level level);
/* Is fd an AF_INET/AF_INET6 socket?  Diagnostics are never written there:
 * a process's stderr may be one of its connections. */
bool sl_log_fd_is_network(int fd);
/* Before a sandbox (seccomp): stop writing to stderr if it is a file the
 * process may not grow; whether it stopped (the stats line asks too). */
void sl_log_before_sandbox(void);
bool sl_log_stderr_muted(void);
/* Has the process installed a sandbox (sl_log_before_sandbox ran)? */
bool sl_log_sandboxed(void);

#define sl_err(...) sl_log(SL_LOG_ERROR, __VA_ARGS__)
#define sl_warn(...) sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_notice(...) sl_log(SL_LOG_NOTICE, __VA_ARGS__)
#define sl_info(...) sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_debug(...) sl_log(SL_LOG_DEBUG, __VA_ARGS__)

#endif
