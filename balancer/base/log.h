/* Logging for the runtime: one line per message, "[rank@host] module:
 * text", on stderr, so output from many ranks can be told apart. The level
 * comes from PLB_LOG (error, warn, info, debug; default warn) and is checked
 * before anything is formatted. Thread-safe (one fprintf per line). */
#ifndef PLB_LOG_H
#define PLB_LOG_H

enum plb__log_level { PLB__LOG_ERROR, PLB__LOG_WARN, PLB__LOG_INFO, PLB__LOG_DEBUG };

extern int plb__log_level;

/* Who is logging: set once at start-up (rank -1: not known yet). */
void plb__log_init(int rank, const char *host);
/* This thread logs as that rank (the in-process worker and its PU threads). */
void plb__log_thread(int rank);
/* A progress line (no newline, redrawn in place with \r) is on stderr, or
 * no longer: a log line clears it first. */
void plb__log_progress(int shown);

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void plb__log_write(int level, const char *module, const char *fmt, ...);

#define plb__log(level, module, ...)                                     \
	do {                                                             \
		if ((level) <= plb__log_level)                           \
			plb__log_write((level), (module), __VA_ARGS__);  \
	} while (0)

#endif
