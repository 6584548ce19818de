/* plbsim --from-models (from_models.c). */
#ifndef PLB_PLBSIM_FROM_MODELS_H
#define PLB_PLBSIM_FROM_MODELS_H

#include <stdio.h>

/* Writes to out a scenario made from the models file `models` and the
 * config it came from: the records of the one kind of run there is, or of
 * the kind whose description contains `kind` (NULL: any); W = units (0:
 * the config's [run] units). Returns the exit status: 0, or 1 after
 * saying why on stderr. */
int plbsim_from_models(const char *config, const char *models, const char *kind, double units,
		       FILE *out);

#endif
