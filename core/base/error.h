/* error.h - status codes and the caller-owned error struct shared by core/ and config/.
 *
 * Functions that can fail return 0 (ENC_OK) or a negative enc_status and,
 * when given a non-NULL enc_error, fill it with a message that names the
 * field, tensor or setting at fault.  The first error wins: later calls to
 * enc_error_set() on an already-set error are ignored, so the innermost and
 * most specific message survives.
 *
 *     enc_error err = {0};
 *     if (enc_model_load(&model, path, &hp, &err) < 0)
 *         fprintf(stderr, "%s\n", err.message);
 */
#ifndef ATTND_ERROR_H
#define ATTND_ERROR_H

/* X(name, value, description): the one table enc_strerror() is made from. */
#define ENC_STATUS_MAP(X)                                                                          \
    X(OK, 0, "ok")                                                                                 \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EIO, -3, "i/o error")                                                                        \
    X(EFORMAT, -4, "malformed file")                                                               \
    X(ENUMERIC, -5, "non-finite result")                                                           \
    X(ELIMIT, -6, "over a limit")

typedef enum enc_status {
#define ENC_STATUS_ENUM(name, value, desc) ENC_##name = value,
    ENC_STATUS_MAP(ENC_STATUS_ENUM)
#undef ENC_STATUS_ENUM
} enc_status;

#define ENC_ERROR_MAX 256

typedef struct enc_error {
    enc_status status;             /* ENC_OK until an error is set */
    char message[ENC_ERROR_MAX];   /* "" until an error is set */
} enc_error;

/* A short description of a status; never NULL. */
const char *enc_strerror(int status);

/* Records an error (printf-style message) unless err is NULL or already holds
 * one.  Returns status, so a failing path can `return enc_error_set(...)`. */
int enc_error_set(enc_error *err, enc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err back to ENC_OK so it can be reused. */
void enc_error_clear(enc_error *err);

#endif
