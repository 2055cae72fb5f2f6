/* fuzz_safetensors.c - fuzz target: the safetensors reader (st_parse, then
 * every tensor converted to float32) and the model loader (enc_model_load on
 * the same bytes, through a memfd, for the fixtures' tiny model D 4, H 2,
 * F 8).  See fuzz.h. */
#include "fuzz.h"

#include "encoder.h"
#include "load/safetensors.h"

#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Loads data as a weights file from a memfd; returns what enc_model_load
 * says (the model is freed).  Skipped (returns 1) when memfd_create fails. */
static int load_model(const uint8_t *data, size_t size, const enc_hparams *hp, enc_error *err)
{
    int fd = memfd_create("fuzz-weights", 0);
    if (fd < 0)
        return 1;
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        FUZZ_ASSERT(n > 0, "writing the memfd failed");
        off += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    enc_model *m = enc_model_load(path, hp, err);
    int rc = m ? 0 : -1;
    enc_model_free(m);
    close(fd);
    return rc;
}

int fuzz_safetensors(const uint8_t *data, size_t size)
{
    st_file f;
    enc_error err = {0};
    if (st_parse(&f, data, size, &err) < 0) {
        FUZZ_ASSERT(err.status < 0 && err.message[0], "a refusal without a message");
        st_close(&f);
    } else {
        /* Valid: every tensor lies inside the buffer, its bytes match its
         * shape, and converts (or is refused by dtype) without harm. */
        for (size_t i = 0; i < f.n_tensors; i++) {
            const st_tensor *t = &f.tensors[i];
            FUZZ_ASSERT(t->data >= data && t->nbytes <= size &&
                            (size_t)(t->data - data) <= size - t->nbytes,
                        "tensor '%s' points outside the input", t->name);
            FUZZ_ASSERT(t->nbytes == t->numel * st_dtype_size(t->dtype),
                        "tensor '%s': %zu bytes for %zu elements", t->name, t->nbytes, t->numel);
            FUZZ_ASSERT(st_find(&f, t->name) == t, "st_find('%s') finds another", t->name);
            float *buf = malloc((t->numel ? t->numel : 1) * sizeof *buf);
            FUZZ_ASSERT(buf != NULL, "out of memory");
            enc_error terr = {0};
            int rc = st_tensor_read_f32(t, buf, &terr);
            FUZZ_ASSERT(rc == 0 || (t->dtype == ST_F8_E4M3 || t->dtype == ST_F8_E5M2),
                        "tensor '%s' (%s) not read: %s", t->name, st_dtype_name(t->dtype),
                        terr.message);
            free(buf);
        }
        st_metadata(&f, "format");
        st_close(&f);
    }

    /* The loader: a model it accepts is one whose tensors were all finite
     * and matched; a refusal names something. */
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 4;
    hp.n_heads = hp.n_kv_heads = 2;
    hp.d_ff = 8;
    hp.n_layers = 1 + (int)(size % 2);
    enc_error lerr = {0};
    if (load_model(data, size, &hp, &lerr) < 0)
        FUZZ_ASSERT(lerr.message[0], "the loader refused without a message");
    return 0;
}

FUZZ_LIBFUZZER_ENTRY(fuzz_safetensors)
