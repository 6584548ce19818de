/* plb error codes: one X-macro table gives the enum, plb_strerror() and
 * plb_errname(). Functions return 0 or a negative PLB_E... code. */
#ifndef PLB_ERRORS_H
#define PLB_ERRORS_H

#if defined(__GNUC__)
#define PLB_API __attribute__((visibility("default")))
#define PLB_WUR __attribute__((warn_unused_result))
#else
#define PLB_API
#define PLB_WUR
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define PLB_ERRORS(X)                                                   \
	X(OK,       0, "success")                                       \
	X(EINVAL,  -1, "invalid argument")                              \
	X(ENOMEM,  -2, "out of memory")                                 \
	X(ESTATE,  -3, "call not allowed in this state")                \
	X(ESTALE,  -4, "grant is not outstanding (already done or lost)") \
	X(ESOLVE,  -5, "equal-time solve failed")                       \
	X(ECONFIG, -6, "bad configuration")                             \
	X(EIO,     -7, "input/output error")                            \
	X(ENOENT,  -8, "no such item")                                 \
	X(EDEVICE, -9, "device error")

enum plb_err {
#define X(name, val, msg) PLB_##name = (val),
	PLB_ERRORS(X)
#undef X
};

/* Human-readable message for a plb error code (static storage). */
PLB_API const char *plb_strerror(int err);
/* The code's name, e.g. "PLB_EINVAL" (static storage). */
PLB_API const char *plb_errname(int err);

#ifdef __cplusplus
}
#endif

#endif
