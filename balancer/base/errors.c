/* plb_strerror() and plb_errname() from the one table in plb_errors.h. */
#include "plb_errors.h"

const char *plb_strerror(int err)
{
	switch (err) {
#define X(name, val, msg) case PLB_##name: return msg;
		PLB_ERRORS(X)
#undef X
	}
	return "unknown error";
}

const char *plb_errname(int err)
{
	switch (err) {
#define X(name, val, msg) case PLB_##name: return "PLB_" #name;
		PLB_ERRORS(X)
#undef X
	}
	return "PLB_E?";
}
