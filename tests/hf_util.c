/* hf_util.c - see hf_util.h. */
#include "hf_util.h"

#include "daemon.h"
#include "load/safetensors.h"
#include "load/sha256.h"
#include "model/model.h"
#include "test_util.h"
#include "torch_fixture.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void scratch_make(scratch *s, const char *base, const char *edit_json, const char *const *remove,
                  const char *const *links)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/attnd_hf_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(s->dir));
    char src[512], dst[640];
    snprintf(src, sizeof src, "%s/config.json", base);
    json_t *cfg = json_load_file(src, 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    if (edit_json) {
        json_t *edit = json_loads(edit_json, 0, NULL);
        ck_assert_msg(edit != NULL, "bad edit %s", edit_json);
        json_object_update(cfg, edit);
        json_decref(edit);
    }
    for (const char *const *r = remove; r && *r; r++)
        json_object_del(cfg, *r);
    snprintf(dst, sizeof dst, "%s/config.json", s->dir);
    ck_assert_int_eq(json_dump_file(cfg, dst, JSON_INDENT(2)), 0);
    json_decref(cfg);
    for (const char *const *l = links; l && *l; l++) {
        snprintf(src, sizeof src, "%s/%s", base, *l);
        snprintf(dst, sizeof dst, "%s/%s", s->dir, *l);
        ck_assert_int_eq(symlink(src, dst), 0);
    }
}

void scratch_write(const scratch *s, const char *name, const char *text)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(text, fp);
    fclose(fp);
}

void scratch_free(scratch *s)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    ck_assert_int_eq(system(cmd), 0);
}

void refused(const char *dir, const char *want)
{
    enc_hf_config c;
    enc_error err = {0};
    enc_model *m = NULL;
    if (enc_hf_config_read(dir, &c, &err) == 0)
        m = enc_model_load_dir(dir, &c.hp, &err);
    const bool loaded = m != NULL;
    enc_model_free(m);
    ck_assert_msg(!loaded, "loaded, want a refusal with '%s'", want);
    ck_assert_msg(strstr(err.message, want) != NULL, "message '%s' lacks '%s'", err.message, want);
}

void refused_edits(const char *base, const config_refusal *cases, size_t n)
{
    static const char *const files[] = {"model.safetensors", NULL};
    for (size_t i = 0; i < n; i++) {
        scratch s;
        scratch_make(&s, base, cases[i].edit, NULL, files);
        refused(s.dir, cases[i].want);
        scratch_free(&s);
    }
}

void config_try(attnd_config *cfg, const char *const *argv, const char *const *env, char *msg,
                size_t size)
{
    char *args[24] = {strdup("attnd")}, *envp[8] = {NULL};
    int argc = 1;
    for (; argv[argc - 1]; argc++) {
        ck_assert_int_lt(argc, 23);
        args[argc] = strdup(argv[argc - 1]);
    }
    for (int i = 0; env && env[i]; i++)
        envp[i] = strdup(env[i]);
    enc_error err = {0};
    msg[0] = '\0';
    if (config_load(cfg, argc, args, envp, &err) < 0)
        snprintf(msg, size, "%s", err.message);
    for (int i = 0; i < argc; i++)
        free(args[i]);
    for (int i = 0; envp[i]; i++)
        free(envp[i]);
}

void settings_refused(const settings_refusal *cases, size_t n)
{
    attnd_config cfg;
    char msg[1024];
    for (size_t i = 0; i < n; i++) {
        config_try(&cfg, cases[i].argv, NULL, msg, sizeof msg);
        ck_assert_msg(strstr(msg, cases[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, msg,
                      cases[i].want);
    }
}

void startup_refused(const char *const *args, const char *want, int status)
{
    const char *argv[24];
    int n = 0;
    for (; args[n]; n++) {
        ck_assert_int_lt(n, 22);
        argv[n] = args[n];
    }
    argv[n++] = "--check-config";
    argv[n] = NULL;
    char *out = NULL;
    const int st = run_attnd(argv, NULL, &out);
    ck_assert_msg(st == status, "exit %d, want %d: %s", st, status, out);
    const char *line = strstr(out, want);
    ck_assert_msg(line != NULL, "'%s' lacks '%s'", out, want);
    while (line > out && line[-1] != '\n')
        line--;
    ck_assert_msg(strncmp(line, "attnd: ", 7) == 0 && strchr(line, '\n') &&
                      strchr(line, '\n')[1] == '\0',
                  "not one last line 'attnd: ...': %s", out);
    free(out);
}

void edit_startup_refused(const char *base, const char *edit, const char *want)
{
    static const char *const files[] = {"model.safetensors", NULL};
    scratch s;
    scratch_make(&s, base, edit, NULL, files);
    startup_refused((const char *const[]){"--model-dir", s.dir, NULL}, want, 2);
    scratch_free(&s);
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The model's list (count, item) equals the JSON array want as sets. */
static void same_names(const char *what, const char *name, size_t n, const char **got,
                       const json_t *want)
{
    ck_assert_msg(json_array_size(want) == n, "%s: %zu %s, the fixture lists %zu", name, n, what,
                  json_array_size(want));
    const char **w = xcalloc(n + 1, sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = json_string_value(json_array_get(want, i));
    qsort(w, n, sizeof *w, by_string);
    qsort(got, n, sizeof *got, by_string);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(w[i] && strcmp(got[i], w[i]) == 0, "%s: %s %zu is %s, the fixture's %s", name,
                      what, i, got[i], w[i] ? w[i] : "(none)");
    free(w);
}

void file_sha256(const char *path, char hex[SHA256_HEX_SIZE])
{
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    const long n = ftell(fp);
    rewind(fp);
    char *buf = xcalloc((size_t)n + 1, 1);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    sha256_hex(buf, (size_t)n, hex);
    free(buf);
}

size_t hf_outside_count(const enc_model *m)
{
    const enc_head_info *h = enc_model_head(m);
    return enc_model_ignored_count(m) + (h ? h->n_tensors : 0);
}

const char *hf_outside_item(const void *m, size_t i)
{
    const size_t n = enc_model_ignored_count(m);
    return i < n ? enc_model_ignored(m, i) : enc_model_head(m)->tensors[i - n];
}

json_t *hf_outside_json(const json_t *model)
{
    const json_t *w = json_object_get(model, "weights"), *h = json_object_get(model, "head");
    json_t *all = json_deep_copy(json_object_get(w, "ignored_tensors"));
    ck_assert_msg(all != NULL, "/v1/model has no weights.ignored_tensors");
    if (json_object_get(h, "tensors"))
        json_array_extend(all, json_object_get(h, "tensors"));
    return all;
}

void hf_check_files(const enc_model *m, const char *dir, const json_t *hf, const char *name)
{
    char path[640];
    /* case.safetensors lists every tensor outside the stack: the ignored
     * ones, the head's and the embedding module's together (check_embed.c
     * tells them apart, from ids.safetensors' list) */
    const enc_embedding_info *emb = enc_model_embedding(m);
    const size_t n_emb = emb ? emb->n_tensors : 0, n_out = hf_outside_count(m);
    size_t n = n_out + n_emb;
    const char **names = xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n_out; i++)
        names[i] = hf_outside_item(m, i);
    for (size_t i = 0; i < n_emb; i++)
        names[n_out + i] = emb->tensors[i];
    same_names("ignored and embedding tensors", name, n, names, json_object_get(hf, "ignored"));
    free(names);
    n = enc_model_file_count(m);
    names = xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        const char *sha;
        names[i] = enc_model_file(m, i, &sha);
        char hex[SHA256_HEX_SIZE];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        file_sha256(path, hex);
        ck_assert_msg(strcmp(sha, hex) == 0, "%s: %s's sha256", name, names[i]);
        ck_assert(i == 0 || strcmp(names[i - 1], names[i]) < 0); /* sorted */
    }
    same_names("files", name, n, names, json_object_get(hf, "files"));
    free(names);
}

json_t *embeddings_json(const float *x, int B, int L, int D)
{
    json_t *emb = json_array();
    for (int b = 0; b < B; b++) {
        json_t *seq = json_array();
        for (int i = 0; i < L; i++) {
            json_t *row = json_array();
            for (int k = 0; k < D; k++)
                json_array_append_new(row, json_real(x[((size_t)b * L + i) * D + k]));
            json_array_append_new(seq, row);
        }
        json_array_append_new(emb, seq);
    }
    return emb;
}

double outputs_diff(const json_t *outputs, const float *want, int B, int L, int D,
                    const float *lengths)
{
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < (lengths ? (int)lengths[b] : L); i++)
            for (int k = 0; k < D; k++) {
                const double g = json_number_value(json_array_get(
                    json_array_get(json_array_get(outputs, (size_t)b), (size_t)i), (size_t)k));
                worst = fmax(worst, fabs(g - want[((size_t)b * L + i) * D + k]));
            }
    return worst;
}

void hf_forward(const enc_model *m, const enc_batch *in, bool naive, float *out)
{
    enc_result res = {.out = out, .attn_mode = ENC_ATTN_NONE};
    enc_error err = {0};
    if (naive) {
        ck_assert_msg(enc_forward_naive(m, in, &res, &err) == 0, "%s", err.message);
    } else {
        enc_workspace *ws = enc_workspace_new(m);
        ck_assert_msg(enc_forward(m, ws, in, &res, &err) == 0, "%s", err.message);
        enc_workspace_free(ws);
    }
}

size_t hf_stack_params(const char *dir)
{
    char path[640];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s: %s", path, err.message);
    size_t n = 0;
    for (size_t i = 0; i < f.n_tensors; i++)
        if (strncmp(f.tensors[i].name, "encoder.layer.", 14) == 0)
            n += f.tensors[i].numel;
    st_close(&f);
    return n;
}

double dir_outputs_diff(const char *dir, const char *case_dir, bool naive)
{
    char path[640];
    snprintf(path, sizeof path, "%s/case.safetensors", case_dir);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s: %s", path, err.message);
    enc_hf_config c;
    ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s: %s", dir, err.message);
    enc_model *m = enc_model_load_dir(dir, &c.hp, &err);
    ck_assert_msg(m != NULL, "%s: %s", dir, err.message);
    const st_tensor *xt = st_find(&f, "x");
    ck_assert(xt && xt->ndim == 3);
    const int B = (int)xt->shape[0], L = (int)xt->shape[1], D = c.hp.d_model;
    ck_assert_int_eq((int)xt->shape[2], D);
    float *x = torch_floats(&f, "x", NULL), *want = torch_floats(&f, "out", NULL);
    int *lengths = NULL;
    if (st_find(&f, "lengths")) {
        float *lf = torch_floats(&f, "lengths", NULL);
        lengths = xcalloc((size_t)B, sizeof *lengths);
        for (int b = 0; b < B; b++)
            lengths[b] = (int)lf[b];
        free(lf);
    }
    const size_t n = (size_t)B * L * D;
    float *out = xcalloc(n, sizeof *out);
    const enc_batch in = batch_plain(x, B, L, lengths);
    hf_forward(m, &in, naive, out);
    const double d = max_abs_diff(out, want, n);
    free(out);
    free(x);
    free(want);
    free(lengths);
    enc_model_free(m);
    st_close(&f);
    return d;
}

enc_model *hf_load(const char *dir)
{
    enc_hf_config c;
    enc_error err = {0};
    ck_assert_msg(enc_hf_config_read(dir, &c, &err) == 0, "%s: %s", dir, err.message);
    enc_model *m = enc_model_load_dir(dir, &c.hp, &err);
    ck_assert_msg(m != NULL, "%s: %s", dir, err.message);
    return m;
}

int32_t *hf_ints(const st_file *f, const char *name, size_t want)
{
    size_t n = 0;
    float *v = torch_floats(f, name, &n);
    if (!v)
        return NULL;
    ck_assert_uint_eq(n, want);
    int32_t *out = xcalloc(n, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = (int32_t)v[i];
    free(v);
    return out;
}

float *hf_text_tensor(const char *dir, const char *name, int dims[3])
{
    char path[512];
    snprintf(path, sizeof path, "%s/text.safetensors", dir);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&f, name);
    ck_assert_msg(t && t->ndim <= 3, "%s: no tensor %s of rank 3 or less", path, name);
    for (int d = 0; d < 3; d++)
        dims[d] = d < (int)t->ndim ? (int)t->shape[d] : 0;
    float *v = torch_floats(&f, name, NULL);
    st_close(&f);
    return v;
}

hf_ids hf_text_ids(const char *dir, const char *ids_name, const char *mask_name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/text.safetensors", dir);
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, path, &err) == 0, "%s", err.message);
    const st_tensor *t = st_find(&f, ids_name);
    ck_assert(t && t->ndim == 2);
    hf_ids x = {.B = (int)t->shape[0], .L = (int)t->shape[1]};
    x.ids = torch_floats(&f, ids_name, NULL);
    x.lengths = xcalloc((size_t)x.B, sizeof *x.lengths);
    float *mask = mask_name ? torch_floats(&f, mask_name, NULL) : NULL;
    for (int b = 0; b < x.B; b++)
        for (int i = 0; i < x.L; i++)
            x.lengths[b] += mask ? mask[b * x.L + i] : 1.0f;
    free(mask);
    st_close(&f);
    return x;
}

json_t *hf_ids_row(const hf_ids *x, int b)
{
    json_t *row = json_array();
    for (int i = 0; i < (int)x->lengths[b]; i++)
        json_array_append_new(row, json_integer((json_int_t)x->ids[b * x->L + i]));
    return row;
}

void hf_ids_free(hf_ids *x)
{
    free(x->ids);
    free(x->lengths);
    x->ids = x->lengths = NULL;
}

void hf_case_load(hf_case *c, const char *dir)
{
    memset(c, 0, sizeof *c);
    hf_ids x = hf_text_ids(dir, "input_ids", "attention_mask");
    int dims[3];
    c->want = hf_text_tensor(dir, "last_hidden_state", dims);
    c->B = x.B;
    c->L = x.L;
    c->D = dims[2];
    ck_assert(dims[0] == c->B && dims[1] == c->L);
    c->ids = xcalloc((size_t)c->B * c->L, sizeof *c->ids);
    c->lengths = xcalloc((size_t)c->B, sizeof *c->lengths);
    c->out = xcalloc((size_t)c->B * c->L * c->D, sizeof *c->out);
    for (int i = 0; i < c->B * c->L; i++)
        c->ids[i] = (int32_t)x.ids[i];
    for (int b = 0; b < c->B; b++) {
        c->lengths[b] = (int)x.lengths[b];
        c->longest = c->lengths[b] > c->longest ? c->lengths[b] : c->longest;
    }
    hf_ids_free(&x);
    c->in_ids = (enc_ids){.input_ids = c->ids};
    c->in = batch_plain(NULL, c->B, c->L, c->lengths);
    c->in.ids = &c->in_ids;
}

double hf_case_diff(hf_case *c, const enc_model *m, bool naive)
{
    hf_forward(m, &c->in, naive, c->out);
    const size_t row = (size_t)c->L * c->D;
    double d = 0.0;
    for (int b = 0; b < c->B; b++)
        d = fmax(d,
                 max_abs_diff(c->out + b * row, c->want + b * row, (size_t)c->lengths[b] * c->D));
    return d;
}

void hf_case_free(hf_case *c)
{
    free(c->ids);
    free(c->lengths);
    free(c->want);
    free(c->out);
}

void expect_bound(const enc_model *m, const char *file, const bound_tensor *parts, size_t n)
{
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, file, &err) == 0, "%s", err.message);
    for (size_t i = 0; i < n; i++) {
        const st_tensor *t = st_find(&f, parts[i].name);
        ck_assert_msg(t != NULL, "%s", parts[i].name);
        ck_assert_int_eq(t->shape[0], parts[i].rows);
        if (parts[i].cols) {
            ck_assert_int_eq(t->shape[1], parts[i].cols);
            ck_assert_msg(model_mapped(m, parts[i].got), "%s: not read in place", parts[i].name);
        }
        ck_assert_msg(memcmp(parts[i].got, t->data, t->numel * sizeof(float)) == 0, "%s",
                      parts[i].name);
    }
    st_close(&f);
}

size_t file_params_but(const char *file, const char *skip)
{
    st_file f;
    enc_error err = {0};
    ck_assert_msg(st_open(&f, file, &err) == 0, "%s", err.message);
    size_t n = 0;
    for (size_t i = 0; i < f.n_tensors; i++)
        if (strcmp(f.tensors[i].name, skip) != 0)
            n += f.tensors[i].numel;
    st_close(&f);
    return n;
}

void hf_case_expect(hf_case *c, const enc_model *m, const char *changed, double tol, double far)
{
    for (int naive = 0; naive < 2; naive++) {
        const double d = hf_case_diff(c, m, naive);
        if (!changed)
            ck_assert_msg(d < tol, "naive %d: outputs differ by %g", naive, d);
        else
            ck_assert_msg(d > far, "naive %d: %s within %g", naive, changed, d);
    }
}
