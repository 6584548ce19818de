/* plb_check_writable (plb.h): whether a run will be able to write a file,
 * asked before the run, without touching the file system. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plb.h"

int plb_check_writable(const char *path, char *err, size_t len)
{
	struct stat st;
	char dir[4096];
	if (!path || !*path) {
		snprintf(err, len, "an empty path; accepted: a file name");
		return PLB_EINVAL;
	}
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(err, len, "%s is a folder; accepted: a file in it", path);
			return PLB_EINVAL;
		}
		if (access(path, W_OK)) {
			snprintf(err, len, "%s cannot be written: %s", path, strerror(errno));
			return PLB_EIO;
		}
		return 0;
	}
	if (errno != ENOENT) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		return PLB_EIO;
	}
	/* a new file: its folder must be there and writable */
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, len, "%s: its folder %s does not exist; accepted: a file in a folder that does",
			 path, dir);
		return PLB_EIO;
	}
	if (access(dir, W_OK | X_OK)) {
		snprintf(err, len, "%s: its folder %s cannot be written: %s", path, dir, strerror(errno));
		return PLB_EIO;
	}
	return 0;
}
