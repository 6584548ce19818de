/* The config loader's text helpers (parse.h): the first error's message
 * with file:line, words and numbers, for config.c, node.c and devmodel.c
 * alike. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/parse.h"

int plb__cfg_report(struct ctx *c, int rc, int line, const char *fmt, ...)
{
	if (c->rc)
		return c->rc;
	c->rc = rc;
	if (!c->err || !c->errlen)
		return rc;
	int n = line > 0 ? snprintf(c->err, c->errlen, "%s:%d: ", c->path, line)
			 : snprintf(c->err, c->errlen, "%s: ", c->path);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int plb__cfg_count_words(const char *s)
{
	int n = 0;

	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		n++;
		while (*s && *s != ' ' && *s != '\t')
			s++;
	}
	return n;
}

int plb__cfg_number(const char *s, size_t len, double *v)
{
	char *end;

	/* decimal only: strtod would take hexadecimal ("0x10" as 16) */
	if (len == 0 || isspace((unsigned char)*s) || memchr(s, 'x', len) || memchr(s, 'X', len))
		return -1;
	*v = strtod(s, &end);
	return end == s + len && isfinite(*v) ? 0 : -1;
}

int plb__cfg_parse_num(const char *s, double *v)
{
	return plb__cfg_number(s, strlen(s), v);
}
