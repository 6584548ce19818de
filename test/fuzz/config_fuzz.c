/* libFuzzer target for the config and scenario parser (the text of an INI
 * file, as a worker gets it from the master, or a file as read from disk):
 * any bytes load or are refused with a message, never a crash, a hang, a
 * leak or a sanitizer report. scripts/fuzz.sh builds and runs it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact copy, no terminator: the parser must keep to size */
	char *text = malloc(size ? size : 1);
	char err[1024];
	struct plb__config cfg;
	if (!text)
		return 0;
	memcpy(text, data, size);
	int rc = plb__config_load_text("fuzz.ini", text, size, &cfg, err, sizeof err);
	if (rc == 0)
		plb__config_fini(&cfg);
	else if (!err[0] || !strstr(err, "fuzz.ini"))
		abort();        /* every refusal names the file */
	free(text);
	return 0;
}
