/* The models file's reader (docs/MODELS.md), shared by the runtime (which
 * starts its PUs from the records of its cluster) and plbsim (which turns
 * a file into a scenario: plbsim --from-models). Pure: no MPI, no devices.
 *
 *   plb-models 1
 *   pu HOST PU DEVICE kernel=K in=BYTES out=BYTES cliff=X samples=N sig=SIGNATURE
 *   UNITS EXEC_S XFER_S            (N lines, oldest first) */
#ifndef PLB_CONFIG_MODELSFILE_H
#define PLB_CONFIG_MODELSFILE_H

#include <stddef.h>

#include "balancer/balancer.h"
#include "plb_errors.h"

#define PLB__MODELS_SAMPLES_MAX 256     /* samples a record holds, at most */
#define PLB__MODELS_KERNEL_MAX 64

/* One record, as read. text/len: the record's lines as they are in the
 * file (to write back a record the reader's caller does not use). */
struct plb__models_rec {
	char host[256], pu[64], dev[96], kernel[PLB__MODELS_KERNEL_MAX];
	size_t in_unit, out_unit;
	double cliff;           /* units, or inf */
	const char *sig;        /* the rest of the header line */
	int n;
	const struct plb__sample *s;
	const char *text;
	size_t len;
	int line;               /* of its header */
};

/* Reads path record by record, calling each(ctx, rec) (0 to go on, or an
 * error code to stop with). Returns 0; PLB_EIO with errno set when the
 * file cannot be opened (ENOENT: it does not exist); PLB_ECONFIG with
 * "path:line: what; accepted: ..." in err for anything not in the
 * format; PLB_ENOMEM; or what each returned. */
PLB_WUR int plb__models_read(const char *path, int (*each)(void *ctx, const struct plb__models_rec *r),
			     void *ctx, char *err, size_t errlen);

#endif
