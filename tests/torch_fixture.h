/* torch_fixture.h - reading the PyTorch fixtures under tests/fixtures/torch/
 * (made by tools/fixtures/make_fixtures.py; its README there describes the format),
 * shared by the core, codec and HTTP suites. */
#ifndef ATTND_TESTS_TORCH_FIXTURE_H
#define ATTND_TESTS_TORCH_FIXTURE_H

#include "encoder.h"
#include "load/safetensors.h"

#include <stddef.h>

#define TORCH_DIR TESTS_DIR "/fixtures/torch"

/* The case directories (those holding a case.safetensors), sorted by name;
 * listed on first use. */
int torch_case_count(void);
const char *torch_case_name(int i);

/* Opens TORCH_DIR/name/case.safetensors into f; fails the test if it cannot. */
void torch_case_open(st_file *f, const char *name);

/* Tensor name of f as floats (owned), or NULL if absent; *numel when non-NULL. */
float *torch_floats(const st_file *f, const char *name, size_t *numel);

/* Appends to args, from args[*n] on, the attnd flags that serve case name's
 * model (--d-model ... --bias/--no-bias --weights PATH), read from f's
 * "config" metadata; each strdup'ed, args kept NULL-terminated; at most max
 * entries in all, NULL included. */
void torch_daemon_flags(const st_file *f, const char *name, char **args, int *n, int max);

/* The model hyperparameters of a case, from its "config" metadata. */
void torch_hparams(const st_file *f, enc_hparams *hp);

/* The case's model, loaded from TORCH_DIR/name/model.safetensors (owned). */
enc_model *torch_model(const char *name, const enc_hparams *hp);

#endif
