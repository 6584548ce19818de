/* The clocks every layer reads, in seconds as doubles, and sleeping until a
 * time on the monotonic one. Pure libc (POSIX clocks). */
#ifndef PLB_BASE_CLOCK_H
#define PLB_BASE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC. */
double plb__now(void);
/* CPU seconds of the calling thread (what a balancer call costs). */
double plb__cpu_now(void);
/* CPU seconds of the whole process. */
double plb__proc_cpu_now(void);
/* Sleep until plb__now() >= t; no system call for a time already past. */
void plb__sleep_until(double t);

#endif
