/* check_model.c - building models: seeded weights against an independent
 * Python implementation of the documented scheme, parameter counts worked by
 * hand, and weights files refused with the tensor named. */
#include "model/embed.h"
#include "model/model.h"
#include "runtime/pool.h"
#include "load/sha256.h"
#include "kernels/simd.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <cblas.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEED_JSON TESTS_DIR "/fixtures/seed/expected.json"
#define MODEL_DIR TESTS_DIR "/fixtures/safetensors/model"

/* The model's storage for a state_dict name (with or without "layers.N."),
 * and its length; NULL if the name is not one of the model's. */
static const float *param_by_name(const enc_model *m, const char *name, size_t *n)
{
    int l = 0, used = 0;
    if (sscanf(name, "layers.%d.%n", &l, &used) == 1 && used > 0)
        name += used;
    if (l < 0 || l >= m->hp.n_layers)
        return NULL;
    const enc_layer *ly = &m->layers[l];
    const size_t D = (size_t)m->hp.d_model, F = (size_t)m->hp.d_ff, KV = (size_t)m->kv_dim;
    const size_t Q = (size_t)m->qkv_dim;
    const struct {
        const char *name;
        const float *p;
        size_t n;
    } map[] = {
        {"self_attn.in_proj_weight", ly->w_q, Q * D}, /* a seeded model's q, k, v adjacent */
        {"self_attn.q_proj_weight", ly->w_q, D * D},
        {"self_attn.k_proj_weight", ly->w_k, KV * D},
        {"self_attn.v_proj_weight", ly->w_v, KV * D},
        {"self_attn.in_proj_bias", ly->b_qkv, Q},
        {"self_attn.out_proj.weight", ly->w_o, D * D},
        {"self_attn.out_proj.bias", ly->b_o, D},
        {"linear1.weight", ly->w_1, F * D},
        {"linear1.bias", ly->b_1, F},
        {"linear2.weight", ly->w_2, D * F},
        {"linear2.bias", ly->b_2, D},
        {"norm1.weight", ly->ln1_w, D},
        {"norm1.bias", ly->ln1_b, D},
        {"norm2.weight", ly->ln2_w, D},
        {"norm2.bias", ly->ln2_b, D},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(name, map[i].name) == 0) {
            *n = map[i].n;
            return map[i].p;
        }
    return NULL;
}

/* A case of SEED_JSON: its hyperparameters into *hp; returns its seed. */
static uint64_t seed_case(const json_t *c, enc_hparams *hp)
{
    const json_t *jhp = json_object_get(c, "hp");
    enc_hparams_default(hp);
    hp->d_model = (int)json_integer_value(json_object_get(jhp, "d_model"));
    hp->n_heads = (int)json_integer_value(json_object_get(jhp, "n_heads"));
    hp->n_kv_heads = (int)json_integer_value(json_object_get(jhp, "n_kv_heads"));
    hp->d_ff = (int)json_integer_value(json_object_get(jhp, "d_ff"));
    hp->n_layers = (int)json_integer_value(json_object_get(jhp, "n_layers"));
    hp->bias = json_is_true(json_object_get(jhp, "bias"));
    return strtoull(json_string_value(json_object_get(c, "seed")), NULL, 10);
}

START_TEST(test_seeded_matches_python)
{
    json_error_t jerr;
    json_t *root = json_load_file(SEED_JSON, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", SEED_JSON, jerr.text);
    json_t *cases = json_object_get(root, "cases");
    ck_assert_int_ge(json_array_size(cases), 3);
    size_t ci;
    json_t *c;
    json_array_foreach(cases, ci, c)
    {
        enc_hparams hp;
        const uint64_t seed = seed_case(c, &hp);

        enc_error err = {0};
        enc_model *m = enc_model_random(&hp, seed, &err);
        ck_assert_msg(m != NULL, "%s", err.message);
        ck_assert_uint_eq(enc_model_param_count(m),
                          (size_t)json_integer_value(json_object_get(c, "params")));
        const char *name;
        json_t *values;
        size_t checked = 0;
        json_object_foreach(json_object_get(c, "tensors"), name, values)
        {
            size_t n = 0;
            const float *p = param_by_name(m, name, &n);
            ck_assert_msg(p != NULL, "case %zu: no parameter %s", ci, name);
            ck_assert_uint_eq(n, json_array_size(values));
            for (size_t i = 0; i < n; i++) {
                float want = (float)json_real_value(json_array_get(values, i));
                if (json_is_integer(json_array_get(values, i)))
                    want = (float)json_integer_value(json_array_get(values, i));
                ck_assert_msg(p[i] == want, "case %zu %s[%zu]: %.9g, want %.9g", ci, name, i,
                              (double)p[i], (double)want);
            }
            checked += n;
        }
        ck_assert_uint_eq(checked, enc_model_param_count(m));
        char src[64];
        snprintf(src, sizeof src, "seed:%llu", (unsigned long long)seed);
        ck_assert_str_eq(enc_model_source(m), src);
        ck_assert_str_eq(enc_model_sha256(m), "");
        enc_model_free(m);
    }
    json_decref(root);
}
END_TEST

/* A float's JSON value (an integer in the file when it is whole). */
static double json_num(const json_t *v)
{
    return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
}

/* The embedding module a seeded model is given (enc_model_seed_embedding:
 * the built-in model's, which takes text) against the independent Python
 * implementation of tools/fixtures/make_seed_fixture.py: its word rows bit for bit,
 * the module's output (LayerNorm of word + token type + sinusoidal
 * position) within float32 rounding, and a forward on the ids equal to one
 * on those outputs given as embeddings. */
START_TEST(test_seeded_embedding_matches_python)
{
    json_error_t jerr;
    json_t *root = json_load_file(SEED_JSON, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", SEED_JSON, jerr.text);
    size_t ci;
    json_t *c;
    json_array_foreach(json_object_get(root, "cases"), ci, c)
    {
        json_t *je = json_object_get(c, "embedding");
        ck_assert_ptr_nonnull(je);
        enc_hparams hp;
        const uint64_t seed = seed_case(c, &hp);
        const int V = (int)json_integer_value(json_object_get(je, "vocab_size"));
        const int P = (int)json_integer_value(json_object_get(je, "max_positions"));
        const int D = hp.d_model;

        enc_error err = {0};
        enc_model *m = enc_model_random(&hp, seed, &err);
        ck_assert_msg(m != NULL, "%s", err.message);
        ck_assert_ptr_null(enc_model_embedding(m)); /* embeddings only until given one */
        ck_assert_int_eq(enc_model_seed_embedding(m, V, P, seed, &err), 0);
        ck_assert_int_eq(enc_model_seed_embedding(m, V, P, seed, &err), ENC_EINVAL);
        ck_assert_str_eq(err.message, "the model has an embedding module already");
        err = (enc_error){0};
        const enc_embedding_info *info = enc_model_embedding(m);
        ck_assert_ptr_nonnull(info);
        ck_assert_int_eq(info->vocab_size, V);
        ck_assert_int_eq(info->type_vocab_size, 2);
        ck_assert_int_eq(info->max_positions, P);
        ck_assert_str_eq(info->position, "sinusoidal");

        /* word rows, as drawn */
        float row[64];
        ck_assert_int_le(D, 64);
        const char *id_text;
        json_t *want;
        json_object_foreach(json_object_get(je, "rows"), id_text, want)
        {
            embed_seeded_row(seed, (int32_t)atoi(id_text), (size_t)D, row);
            for (int j = 0; j < D; j++)
                ck_assert_msg(row[j] == (float)json_num(json_array_get(want, j)),
                              "case %zu row %s[%d]: %.9g, want %.9g", ci, id_text, j,
                              (double)row[j], json_num(json_array_get(want, j)));
        }

        /* the module's output, through the forward's own path */
        json_t *jids = json_object_get(je, "ids"), *jtt = json_object_get(je, "token_type_ids");
        json_t *jout = json_object_get(je, "embedded");
        const int L = (int)json_array_size(jids);
        int32_t ids[16], tts[16];
        float embedded[16 * 64], x[16 * 64];
        ck_assert_int_le(L, 16);
        for (int i = 0; i < L; i++) {
            ids[i] = (int32_t)json_integer_value(json_array_get(jids, i));
            tts[i] = (int32_t)json_integer_value(json_array_get(jtt, i));
            for (int j = 0; j < D; j++)
                embedded[i * D + j] = (float)json_num(json_array_get(json_array_get(jout, i), j));
        }
        const enc_ids eids = {.input_ids = ids, .token_type_ids = tts};
        enc_batch in = {.ids = &eids, .B = 1, .L = L};
        ck_assert_int_eq(embed_validate(m->embed, &in, &err), 0);
        embed_rows(m->embed, &in, 0, 0, L, x, D);
        for (int k = 0; k < L * D; k++)
            ck_assert_msg(fabsf(x[k] - embedded[k]) <= 2e-6f, "case %zu embedded[%d]: %.9g, want %.9g",
                          ci, k, (double)x[k], (double)embedded[k]);

        /* the forward on ids = the forward on the reference's embeddings */
        float out_ids[16 * 64], out_x[16 * 64];
        enc_workspace *ws = enc_workspace_new(m);
        enc_result res = {.out = out_ids};
        ck_assert_msg(enc_forward(m, ws, &in, &res, &err) == 0, "%s", err.message);
        const enc_batch in_x = {.x = embedded, .B = 1, .L = L};
        res.out = out_x;
        ck_assert_msg(enc_forward(m, ws, &in_x, &res, &err) == 0, "%s", err.message);
        for (int k = 0; k < L * D; k++)
            ck_assert_msg(fabsf(out_ids[k] - out_x[k]) <= 2e-5f, "case %zu out[%d]: %.9g vs %.9g",
                          ci, k, (double)out_ids[k], (double)out_x[k]);

        /* an id past the vocabulary is refused, as a directory's */
        ids[0] = V;
        ck_assert_int_eq(enc_forward(m, ws, &in, &res, &err), ENC_EINVAL);
        ck_assert_msg(strstr(err.message, "is outside 0..") != NULL, "%s", err.message);
        enc_workspace_free(ws);
        enc_model_free(m);
    }
    json_decref(root);
}
END_TEST

START_TEST(test_seed_changes_weights)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.d_model = 16;
    hp.n_heads = 2;
    hp.n_kv_heads = 2;
    hp.d_ff = 8;
    enc_model *a = enc_model_random(&hp, 1, NULL), *b = enc_model_random(&hp, 1, NULL);
    enc_model *c = enc_model_random(&hp, 2, NULL);
    ck_assert(memcmp(a->params, b->params, a->n_owned * sizeof(float)) == 0);
    ck_assert(memcmp(a->params, c->params, a->n_owned * sizeof(float)) != 0);
    enc_model_free(a);
    enc_model_free(b);
    enc_model_free(c);
    enc_model_free(NULL); /* a no-op */
}
END_TEST

/* Parameter counts worked by hand from docs/contract.md section 2's table. */
START_TEST(test_param_counts)
{
    enc_hparams hp = {HP_BASE(4, 2, 2, 8, 1, ENC_ACT_RELU, false, 1e-5f, true)};
    /* in_proj 12x4 + 12, out 4x4 + 4, linear1 8x4 + 8, linear2 4x8 + 4, norms 4 x 4 */
    enc_model *m = enc_model_random(&hp, 0, NULL);
    ck_assert_uint_eq(enc_model_param_count(m), 48 + 12 + 16 + 4 + 32 + 8 + 32 + 4 + 16);
    enc_model_free(m);
    hp.bias = false; /* weights and the two norm weights only */
    m = enc_model_random(&hp, 0, NULL);
    ck_assert_uint_eq(enc_model_param_count(m), 48 + 16 + 32 + 32 + 8);
    enc_model_free(m);
    enc_hparams gqa = {HP_BASE(8, 4, 2, 16, 3, ENC_ACT_RELU, false, 1e-5f, true)};
    /* q 8x8, k and v 4x8 each, bias 16; out 64 + 8; ff 128 + 16 + 128 + 8; norms 32 */
    m = enc_model_random(&gqa, 0, NULL);
    ck_assert_uint_eq(enc_model_param_count(m), 3 * (64 + 64 + 16 + 72 + 280 + 32));
    enc_model_free(m);
}
END_TEST

START_TEST(test_invalid_hparams_refused)
{
    enc_hparams hp;
    enc_hparams_default(&hp);
    hp.n_heads = 7;
    enc_error err = {0};
    ck_assert_ptr_null(enc_model_random(&hp, 0, &err));
    ck_assert_int_eq(err.status, ENC_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "n_heads (7)"));
}
END_TEST

/* The tiny model the broken files are variants of. */
static enc_hparams tiny_hparams(void)
{
    enc_hparams hp = {HP_BASE(4, 2, 2, 8, 1, ENC_ACT_RELU, false, 1e-5f, true)};
    return hp;
}

START_TEST(test_model_files)
{
    json_error_t jerr;
    json_t *expect = json_load_file(MODEL_DIR "/expected.json", 0, &jerr);
    ck_assert_msg(expect != NULL, "%s", jerr.text);
    ck_assert_int_ge(json_object_size(expect), 7);
    const char *file;
    json_t *want;
    json_object_foreach(expect, file, want)
    {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", MODEL_DIR, file);
        enc_hparams hp = tiny_hparams();
        enc_error err = {0};
        enc_model *m = enc_model_load(path, &hp, &err);
        if (json_is_true(json_object_get(want, "ok"))) {
            ck_assert_msg(m != NULL, "%s refused: %s", file, err.message);
            ck_assert_str_eq(enc_model_source(m), path);
            ck_assert_uint_eq(strlen(enc_model_sha256(m)), 64);
        } else {
            const char *msg = json_string_value(json_object_get(want, "error"));
            ck_assert_msg(m == NULL, "%s loaded but should fail with %s", file, msg);
            ck_assert_int_eq(err.status, ENC_EFORMAT);
            ck_assert_msg(strstr(err.message, msg), "%s: '%s' lacks '%s'", file, err.message, msg);
        }
        enc_model_free(m);
    }
    json_decref(expect);
}
END_TEST

/* The valid file's values land where the names say, and its sha256 is the
 * digest of the file's bytes read without the loader. */
START_TEST(test_valid_file_contents)
{
    enc_hparams hp = tiny_hparams();
    enc_error err = {0};
    enc_model *m = enc_model_load(MODEL_DIR "/valid.safetensors", &hp, &err);
    ck_assert_msg(m != NULL, "%s", err.message);
    ck_assert_uint_eq(enc_model_param_count(m), 172);

    FILE *f = fopen(MODEL_DIR "/valid.safetensors", "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char hex[SHA256_HEX_SIZE];
    sha256_hex(buf, n, hex);
    ck_assert_str_eq(enc_model_sha256(m), hex);

    /* Norm weights are 1 in the file; the values elsewhere are not all zero. */
    for (int k = 0; k < 4; k++)
        ck_assert_float_eq(m->layers[0].ln1_w[k], 1.0f);
    double sum = 0;
    for (size_t i = 0; i < 48; i++)
        sum += fabs(m->layers[0].w_q[i]);
    ck_assert(sum > 0);
    enc_model_free(m);
}
END_TEST

START_TEST(test_missing_file_named)
{
    enc_hparams hp = tiny_hparams();
    enc_error err = {0};
    ck_assert_ptr_null(enc_model_load("/nonexistent/w.safetensors", &hp, &err));
    ck_assert_int_eq(err.status, ENC_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/w.safetensors"));
}
END_TEST

START_TEST(test_wrong_hparams_for_file)
{
    /* The tiny file read as d_ff 16: the first mismatching tensor is named. */
    enc_hparams hp = tiny_hparams();
    hp.d_ff = 16;
    enc_error err = {0};
    ck_assert_ptr_null(enc_model_load(MODEL_DIR "/valid.safetensors", &hp, &err));
    ck_assert_str_eq(err.message, "tensor 'linear1.weight' has shape [8, 4], expected [16, 4]");
    /* As two layers: the unprefixed names do not exist. */
    hp = tiny_hparams();
    hp.n_layers = 2;
    enc_error_clear(&err);
    ck_assert_ptr_null(enc_model_load(MODEL_DIR "/valid.safetensors", &hp, &err));
    ck_assert_ptr_nonnull(strstr(err.message, "missing tensor 'layers.0."));
    /* With bias off, the biases are unexpected. */
    hp = tiny_hparams();
    hp.bias = false;
    enc_error_clear(&err);
    ck_assert_ptr_null(enc_model_load(MODEL_DIR "/valid.safetensors", &hp, &err));
    ck_assert_ptr_nonnull(strstr(err.message, "bias false"));
}
END_TEST

/* OpenBLAS's buffer pool, as core/model/forward.c reaches it. */
extern void *blas_memory_alloc(int procpos) __attribute__((weak));
extern void blas_memory_free(void *area) __attribute__((weak));

/* The process's address space now, from /proc/self/status (0 if unknown). */
static unsigned long vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    unsigned long kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %lu", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb * 1024;
}

/* Limits this process's address space to what it uses now plus room
 * bytes, the limit before in *old; 0, or -1.  10 ms pass between the
 * reading and the limit: a thread of the process that maps memory then
 * (a team helper starting late, on a busy host, and mapping its malloc
 * arena: team.c's helper_main) leaves less than room, and the test that
 * counted on it fails. */
static int limit_address_space(unsigned long room, struct rlimit *old)
{
    const unsigned long vsz = vm_size();
    if (vsz == 0 || getrlimit(RLIMIT_AS, old) != 0)
        return -1;
    usleep(10000);
    struct rlimit rl = *old;
    rl.rlim_cur = vsz + room;
    return setrlimit(RLIMIT_AS, &rl);
}

/* Runs body(m) in a forked child under alarm(30), so that a hang fails the
 * test, and fails unless the child exits 0; codes names the nonzero exit
 * codes for the message, which also quotes what the child wrote to stderr
 * (the forward's error, OpenBLAS's warnings).  The child keeps the runner's
 * thread count (check_main.c's enc_set_threads(2)): openblas_set_num_threads
 * in a child after fork restarts OpenBLAS's threads, each taking a buffer.
 * Under make valgrind (CK_FORK=no) the child checks for leaks when it exits,
 * so the bodies free what they make. */
static void run_in_child(int (*body)(enc_model *), enc_model *m, const char *codes)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL); /* not the handler Check's runner installed */
        alarm(30);
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        _exit(body(m));
    }
    close(fds[1]);
    char said[2048], rest[512];
    size_t n = 0;
    for (ssize_t k; (k = n < sizeof said - 1 ? read(fds[0], said + n, sizeof said - 1 - n)
                                             : read(fds[0], rest, sizeof rest)) != 0;)
        if (k < 0 && errno != EINTR)
            break;
        else if (k > 0 && n < sizeof said - 1)
            n += (size_t)k; /* past the first 2 KiB, read and dropped */
    while (n > 0 && (said[n - 1] == '\n' || said[n - 1] == ' '))
        n--;
    said[n] = '\0';
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child %s %d (%s; SIGALRM: a hang, a BLAS buffer mapping retried for ever)%s%s",
                  WIFEXITED(status) ? "exited" : "killed by signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), codes,
                  n ? "; its stderr: " : "", said);
}

/* Two workspaces (teams of 2), then 1 MiB more address space (no room for
 * a buffer, 128 MiB), then as many buffers held at once as the workspaces'
 * threads and OpenBLAS's possible threads (its CPU count less one). */
static int hold_blas_buffers(enc_model *m)
{
    enc_workspace *a = enc_workspace_new(m), *b = enc_workspace_new(m);
    struct rlimit old;
    if (!a || !b || limit_address_space(1ul << 20, &old) != 0)
        return 3;
    static void *held[4 + 256];
    const int want = 4 + openblas_get_num_procs() - 1;
    int got = 0;
    while (got < want && got < (int)(sizeof held / sizeof *held) &&
           (held[got] = blas_memory_alloc(0)) != NULL)
        got++;
    const int code = got < want ? 6 : 0;
    setrlimit(RLIMIT_AS, &old); /* room again for valgrind's exit-time check */
    while (got > 0)
        blas_memory_free(held[--got]);
    enc_workspace_free(a);
    enc_workspace_free(b);
    enc_model_free(m);
    return code;
}

/* What the pause hook of test_forward_pauses does at each pause: runs a
 * short batch on the workspace beside and checks its outputs. */
typedef struct pause_probe {
    const enc_model *m;
    enc_workspace *beside;
    const enc_batch *in;
    const float *want;
    float *out;
    int calls;
    double worst; /* the short forwards' largest difference from want */
} pause_probe;

static void pause_forward(void *arg)
{
    pause_probe *pp = arg;
    enc_error err = {0};
    enc_result r = {.out = pp->out, .attn_mode = ENC_ATTN_NONE};
    ck_assert_int_eq(enc_forward(pp->m, pp->beside, pp->in, &r, &err), 0);
    const double d = max_abs_diff(pp->out, pp->want, (size_t)pp->in->L * pp->m->hp.d_model);
    pp->worst = d > pp->worst ? d : pp->worst;
    pp->calls++;
}

/* A forward with a pause hook (enc_workspace_on_pause) runs its Linears in
 * blocks of rows and its attention in parts, a phase each, and the hook runs another forward on a
 * workspace beside it (enc_workspace_new_beside) at every pause: both
 * forwards' outputs stay those of the same batches run on their own, in
 * float32, bfloat16 and int8, and with RoPE (whose angles follow the rows). */
START_TEST(test_forward_pauses)
{
    static const enc_dtype dtypes[] = {ENC_DTYPE_FLOAT32, ENC_DTYPE_BFLOAT16, ENC_DTYPE_INT8};
    enum { B = 2, L = 300, DM = 256 };
    const int lengths[B] = {300, 211};
    float *x = malloc(sizeof(float) * B * L * DM), *want = malloc(sizeof(float) * B * L * DM),
          *got = malloc(sizeof(float) * B * L * DM);
    static float xs[7 * DM], want_s[7 * DM], out_s[7 * DM];
    ck_assert(x && want && got);
    uint64_t st = 17;
    fill_random(x, (size_t)B * L * DM, &st, 1.0f);
    fill_random(xs, 7 * DM, &st, 1.0f);
    for (int rope = 0; rope < 2; rope++)
        for (int d = 0; d < 3; d++) {
            enc_hparams hp = {HP_BASE(DM, 4, 4, 256, 1, ENC_ACT_GELU, false, 1e-5f, true)};
            hp.dtype = dtypes[d];
            if (rope) {
                hp.position = ENC_POS_ROPE;
                hp.rope_style = ENC_ROPE_NEOX;
                hp.rope_theta = 10000.0;
            }
            enc_error err = {0};
            enc_model *m = enc_model_random(&hp, 5, &err);
            ck_assert_msg(m != NULL, "%s", err.message);
            const enc_batch in = batch_plain(x, B, L, lengths), small = batch_plain(xs, 1, 7, NULL);
            enc_workspace *ws = enc_workspace_new(m);
            enc_result r = {.out = want, .attn_mode = ENC_ATTN_NONE};
            ck_assert_int_eq(enc_forward(m, ws, &in, &r, &err), 0);
            r.out = want_s;
            ck_assert_int_eq(enc_forward(m, ws, &small, &r, &err), 0);
            pause_probe pp = {m, enc_workspace_new_beside(m, ws), &small, want_s, out_s, 0, 0};
            ck_assert_ptr_nonnull(pp.beside);
            enc_workspace_on_pause(ws, pause_forward, &pp);
            r.out = got;
            ck_assert_int_eq(enc_forward(m, ws, &in, &r, &err), 0);
            const double diff = max_abs_diff(got, want, (size_t)B * L * DM);
            printf("model: forward pauses, %s%s: %d pauses, long batch off by %g, short by %g\n",
                   enc_dtype_name(hp.dtype), rope ? ", RoPE" : "", pp.calls, diff, pp.worst);
            /* 511 rows: each of the four Linears in 2 blocks, and attention
             * (300² + 211² scores per head) in 2, besides the other phases */
            ck_assert_int_ge(pp.calls, 4 * 2 + 2);
            ck_assert_msg(diff <= 1e-5 && pp.worst <= 1e-5, "%s rope %d: off by %g and %g",
                          enc_dtype_name(hp.dtype), rope, diff, pp.worst);
            enc_workspace_free(pp.beside);
            enc_workspace_free(ws);
            enc_model_free(m);
        }
    free(x);
    free(want);
    free(got);
}
END_TEST

/* Workspaces map OpenBLAS's buffers for all their threads' BLAS calls, and
 * for OpenBLAS's own threads, when they are made (forward.c): with the
 * address space then used up, that many buffers at once are still there.
 * Without the reservation OpenBLAS retries a failing mapping for ever (the
 * hang test_out_of_memory_request found). */
START_TEST(test_workspace_maps_blas_buffers)
{
    ck_assert_msg(blas_memory_alloc != NULL, "linked without OpenBLAS's buffer pool");
    enc_hparams hp = {HP_BASE(16, 4, 4, 32, 1, ENC_ACT_RELU, false, 1e-5f, true)};
    enc_model *m = enc_model_random(&hp, 0, NULL);
    ck_assert_ptr_nonnull(m);
    run_in_child(hold_blas_buffers, m, "3: no workspaces or no limit, 6: pool exhausted");
    enc_model_free(m);
}
END_TEST

/* More forward threads than OpenBLAS's buffers cover are refused where the
 * forwards call OpenBLAS, before any thread starts; the bound is 2 x the
 * MAX_THREADS OpenBLAS reports, less its own threads (CPUs - 1). */
START_TEST(test_pool_threads_over_blas_buffers)
{
    const char *cfg = openblas_get_config(), *mt = strstr(cfg, "MAX_THREADS=");
    ck_assert_msg(mt, "openblas_get_config() has no MAX_THREADS: %s", cfg);
    const int bound = 2 * atoi(mt + strlen("MAX_THREADS=")) - (openblas_get_num_procs() - 1);
    enc_hparams hp = {HP_BASE(16, 4, 4, 32, 1, ENC_ACT_RELU, false, 1e-5f, true)};
    enc_model *m = enc_model_random(&hp, 0, NULL);
    ck_assert_ptr_nonnull(m);
    const bool was = simd_enabled();
    const int threads = enc_threads();
    simd_set_enabled(false); /* the cblas path, as on a CPU without AVX-512 */
    ck_assert_int_eq(enc_blas_threads_max(m), bound);
    enc_set_threads(bound / 2 + 1);
    enc_error err = {0};
    pool_options o = {.workers = 2, .queue_size = 4, .batch_tokens = 1024};
    ck_assert_ptr_null(pool_new(m, &o, &err));
    ck_assert_int_eq(err.status, ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "compute.workers") && strstr(err.message, "forward_threads"),
                  "%s", err.message);
    enc_set_threads(bound / 2); /* at the bound: accepted */
    ck_assert_int_eq(pool_check(m, 2, &(enc_error){0}), 0);
    simd_set_enabled(was);
    if (was && m->packed) /* the AVX-512 kernel calls no BLAS: no bound */
        ck_assert_int_eq(enc_blas_threads_max(m), INT_MAX);
    enc_set_threads(threads);
    enc_model_free(m);
}
END_TEST

static void job_done(pool_job *job, void *arg)
{
    (void)job;
    atomic_store((atomic_int *)arg, 1);
}

/* A pool of 2 workers, then 16 MiB more address space (room for the
 * forward's workspace, 1.2 MB; none for a BLAS buffer, 128 MiB), then one
 * forward, checked against enc_forward_naive. */
static int forward_after_limit(enc_model *m)
{
    pool_options o = {.workers = 2, .queue_size = 4, .batch_tokens = 1024};
    enc_error err = {0};
    pool *p = pool_new(m, &o, &err);
    struct rlimit old;
    if (!p || limit_address_space(16ul << 20, &old) != 0)
        return 3;
    static float x[3 * 16], out[3 * 16], ref[3 * 16];
    for (int i = 0; i < 3 * 16; i++)
        x[i] = (float)((i * 7) % 11) * 0.25f - 1.0f;
    enc_batch in = {.x = x,
                    .B = 1,
                    .L = 3,
                    .mask = {.window_left = ENC_WINDOW_NONE, .window_right = ENC_WINDOW_NONE}};
    atomic_int done = 0;
    pool_job job = {.batch = &in, .result = {.out = out}, .done = job_done, .arg = &done};
    int code = 0;
    if (pool_submit(p, &job) != 0)
        code = 6;
    while (code == 0 && !atomic_load(&done))
        usleep(1000);
    enc_result rr = {.out = ref};
    if (code == 0 && job.rc != 0) {
        fprintf(stderr, "forward: %s\n", job.err.message);
        code = 7;
    } else if (code == 0 && enc_forward_naive(m, &in, &rr, &err) != 0) {
        code = 8;
    }
    for (int i = 0; code == 0 && i < 3 * 16; i++)
        if (fabsf(out[i] - ref[i]) > 1e-4f)
            code = 9;
    setrlimit(RLIMIT_AS, &old); /* as in hold_blas_buffers */
    pool_free(p);
    enc_model_free(m);
    return code;
}

/* pool_new returns with every worker's workspace made (pool.c), before the
 * daemon says it is ready.  So an address-space limit set at once, as
 * test_out_of_memory_request sets it on the running daemon, still leaves
 * forwards working.  When the workers made their own workspaces, they could
 * do it under the limit, where OpenBLAS's buffer mapping spun for ever (CI
 * on 1fde720). */
START_TEST(test_pool_ready_before_limit)
{
    enc_hparams hp = {HP_BASE(16, 4, 4, 32, 1, ENC_ACT_RELU, false, 1e-5f, true)};
    enc_model *m = enc_model_random(&hp, 3, NULL);
    ck_assert_ptr_nonnull(m);
    run_in_child(forward_after_limit, m,
                 "3: pool_new failed or no limit, 7: forward failed, 8: naive forward failed, "
                 "9: outputs differ from the naive forward");
    enc_model_free(m);
}
END_TEST

Suite *model_suite(void)
{
    Suite *s = timed_suite("model");
    TCase *tc = timed_case(s, "build", 60);
    tcase_add_test(tc, test_seeded_matches_python);
    tcase_add_test(tc, test_seeded_embedding_matches_python);
    tcase_add_test(tc, test_seed_changes_weights);
    tcase_add_test(tc, test_param_counts);
    tcase_add_test(tc, test_invalid_hparams_refused);
    TCase *tl = timed_case(s, "load", 60);
    tcase_add_test(tl, test_model_files);
    tcase_add_test(tl, test_valid_file_contents);
    tcase_add_test(tl, test_missing_file_named);
    tcase_add_test(tl, test_wrong_hparams_for_file);
    TCase *tw = timed_case(s, "workspace", 60);
    tcase_add_test(tw, test_workspace_maps_blas_buffers);
    tcase_add_test(tw, test_forward_pauses);
    tcase_add_test(tw, test_pool_ready_before_limit);
    tcase_add_test(tw, test_pool_threads_over_blas_buffers);
    return s;
}
