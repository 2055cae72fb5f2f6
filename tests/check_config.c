/* check_config.c - settings from flags, ATTND_* variables, a JSON file and
 * defaults: every setting through every route, precedence, the error
 * messages, and --help.  Expected values are written out here, never read
 * from config.c's table. */
#include "config/config.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------- */

/* Writes text to a new file under /tmp; path is a "/tmp/...XXXXXX" template. */
static void write_temp(char *path, const char *text)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    size_t n = strlen(text);
    ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
}

/* Runs config_load on "attnd" followed by args (NULL-terminated, may be
 * NULL) with the variables env (NULL-terminated, may be NULL).  When json is
 * not NULL it is written to a temporary file passed first as --config FILE,
 * and the file is removed before returning. */
static int load(attnd_config *cfg, enc_error *err, const char *json, char **args, char **env)
{
    char path[] = "/tmp/attnd-config-XXXXXX";
    char *argv[64];
    int argc = 0;
    argv[argc++] = "attnd";
    if (json) {
        write_temp(path, json);
        argv[argc++] = "--config";
        argv[argc++] = path;
    }
    for (; args && *args; args++) {
        ck_assert_int_lt(argc, 63);
        argv[argc++] = *args;
    }
    argv[argc] = NULL;
    *err = (enc_error){0};
    int rc = config_load(cfg, argc, argv, env, err);
    if (json)
        unlink(path);
    return rc;
}

/* Loads, expecting success; the message is shown if it fails. */
static void load_ok(attnd_config *cfg, const char *json, char **args, char **env)
{
    enc_error err;
    int rc = load(cfg, &err, json, args, env);
    ck_assert_msg(rc == 0, "config_load failed: %s", err.message);
    ck_assert_int_eq(err.status, ENC_OK);
}

#define ARGS(...) ((char *[]){__VA_ARGS__, NULL})
#define ENV(...)  ((char *[]){__VA_ARGS__, NULL})

/* The defaults (docs/configuration.md, docs/contract.md section 1), written
 * out. */
static void assert_defaults(const attnd_config *c)
{
    ck_assert_str_eq(c->server.host, "0.0.0.0");
    ck_assert_int_eq(c->server.port, 8080);
    ck_assert_int_eq(c->server.threads, 2);
    ck_assert_uint_eq(c->server.max_body_bytes, 67108864u);
    ck_assert_ptr_null(c->server.api_key);
    ck_assert_ptr_null(c->server.cors_origin);
    ck_assert_int_eq(c->server.max_connections, 2048);
    ck_assert_int_eq(c->server.max_connections_per_ip, 0);
    ck_assert_int_eq(c->server.connection_timeout, 30);
    ck_assert(c->server.access_log);
    ck_assert(!c->server.auto_truncate);
    ck_assert_int_eq(c->compute.workers, 1);
    ck_assert_int_eq(c->compute.forward_threads, 2);
    ck_assert_int_eq(c->compute.queue_size, 64);
    ck_assert_int_eq(c->compute.batch_tokens, 8192);
    ck_assert_int_eq(c->compute.batch_delay_ms, 0);
    ck_assert_int_eq(c->compute.spin_us, 2000);
    ck_assert_int_eq(c->limits.max_batch, 64);
    ck_assert_int_eq(c->limits.max_seq_len, 4096);
    ck_assert_int_eq(c->limits.max_batch_tokens, 65536);
    ck_assert_uint_eq(c->limits.max_attention_bytes, 268435456u);
    ck_assert_str_eq(c->model.name, "encoder");
    ck_assert_int_eq(c->model.hp.d_model, 512);
    ck_assert_int_eq(c->model.hp.n_heads, 8);
    ck_assert_int_eq(c->model.hp.n_kv_heads, 8);
    ck_assert_int_eq(c->model.hp.d_ff, 2048);
    ck_assert_int_eq(c->model.hp.n_layers, 1);
    ck_assert_int_eq(c->model.hp.activation, ENC_ACT_RELU);
    ck_assert(!c->model.hp.norm_first);
    ck_assert_float_eq(c->model.hp.layer_norm_eps, 1e-5f);
    ck_assert(c->model.hp.bias);
    ck_assert_ptr_null(c->model.weights);
    ck_assert_uint_eq(c->model.seed, 0);
    ck_assert(!c->help);
    ck_assert(!c->version);
    ck_assert(!c->check_config);
}

/* The non-default values that the flags, variables and file below all set. */
static void assert_custom(const attnd_config *c)
{
    ck_assert_str_eq(c->server.host, "127.0.0.1");
    ck_assert_int_eq(c->server.port, 9000);
    ck_assert_int_eq(c->server.threads, 3);
    ck_assert_uint_eq(c->server.max_body_bytes, 1099511627776ull);
    ck_assert_str_eq(c->server.api_key, "s3cret");
    ck_assert_str_eq(c->server.cors_origin, "https://example.com");
    ck_assert_int_eq(c->server.max_connections, 100000);
    ck_assert_int_eq(c->server.max_connections_per_ip, 32);
    ck_assert_int_eq(c->server.connection_timeout, 3600);
    ck_assert(!c->server.access_log);
    ck_assert(c->server.auto_truncate);
    ck_assert_int_eq(c->compute.workers, 64);
    ck_assert_int_eq(c->compute.forward_threads, 256);
    ck_assert_int_eq(c->compute.queue_size, 1000000);
    ck_assert_int_eq(c->compute.batch_tokens, 1048576);
    ck_assert_int_eq(c->compute.batch_delay_ms, 10000);
    ck_assert_int_eq(c->compute.spin_us, 0);
    ck_assert_int_eq(c->limits.max_batch, 1048576);
    ck_assert_int_eq(c->limits.max_seq_len, 128);
    ck_assert_int_eq(c->limits.max_batch_tokens, 2147483647L);
    ck_assert_uint_eq(c->limits.max_attention_bytes, 0);
    ck_assert_str_eq(c->model.name, "tiny-v1.0_x");
    ck_assert_int_eq(c->model.hp.d_model, 64);
    ck_assert_int_eq(c->model.hp.n_heads, 4);
    ck_assert_int_eq(c->model.hp.n_kv_heads, 2);
    ck_assert_int_eq(c->model.hp.d_ff, 96);
    ck_assert_int_eq(c->model.hp.n_layers, 3);
    ck_assert_int_eq(c->model.hp.activation, ENC_ACT_GELU_TANH);
    ck_assert(c->model.hp.norm_first);
    ck_assert_float_eq(c->model.hp.layer_norm_eps, 1e-6f);
    ck_assert(!c->model.hp.bias);
    ck_assert_str_eq(c->model.weights, "/models/m.safetensors");
    ck_assert_uint_eq(c->model.seed, 18446744073709551615ull);
}

/* ---- defaults ----------------------------------------------------------------- */

START_TEST(test_defaults)
{
    attnd_config cfg;
    load_ok(&cfg, NULL, NULL, NULL);
    assert_defaults(&cfg);
    ck_assert_ptr_null(cfg.config_path);
    config_free(&cfg);
    /* argc 0 and an empty environment are the same. */
    enc_error err = {0};
    ck_assert_int_eq(config_load(&cfg, 0, NULL, ENV("PATH=/bin", "HOME=/root"), &err), 0);
    assert_defaults(&cfg);
    config_free(&cfg);
}
END_TEST

START_TEST(test_default_file_is_the_defaults)
{
    char path[] = TESTS_DIR "/../config/attnd.json";
    attnd_config cfg;
    load_ok(&cfg, NULL, ARGS("--config", path), NULL);
    assert_defaults(&cfg);
    ck_assert_str_eq(cfg.config_path, path);
    config_free(&cfg);

    /* It names every setting, so it overrides every variable. */
    load_ok(&cfg, NULL, NULL, ENV("ATTND_CONFIG=" TESTS_DIR "/../config/attnd.json"));
    assert_defaults(&cfg);
    ck_assert_str_eq(cfg.config_path, path);
    config_free(&cfg);
}
END_TEST

/* ---- every setting through every route -------------------------------------- */

START_TEST(test_flags_set_every_field)
{
    attnd_config cfg;
    load_ok(&cfg, NULL,
            ARGS("--host", "127.0.0.1", "--port=9000", "--threads", "3", "--max-body-bytes",
                 "1099511627776", "--api-key", "s3cret", "--cors-origin=https://example.com",
                 "--max-connections", "100000", "--max-connections-per-ip", "32",
                 "--connection-timeout", "3600", "--no-access-log", "--auto-truncate", "--workers",
                 "64", "--forward-threads", "256", "--queue-size", "1000000", "--batch-tokens",
                 "1048576", "--batch-delay-ms", "10000", "--spin-us", "0", "--max-batch", "1048576",
                 "--max-seq-len", "128", "--max-batch-tokens", "2147483647",
                 "--max-attention-bytes", "0", "--model-name", "tiny-v1.0_x", "--d-model", "64",
                 "--n-heads", "4", "--n-kv-heads", "2", "--d-ff", "96", "--n-layers", "3",
                 "--activation", "gelu_tanh", "--norm-first", "--layer-norm-eps", "1e-6",
                 "--bias=false", "--weights", "/models/m.safetensors", "--seed",
                 "18446744073709551615"),
            NULL);
    assert_custom(&cfg);
    config_free(&cfg);
}
END_TEST

START_TEST(test_variables_set_every_field)
{
    attnd_config cfg;
    load_ok(&cfg, NULL, NULL,
            ENV("ATTND_HOST=127.0.0.1", "ATTND_PORT=9000", "ATTND_THREADS=3",
                "ATTND_MAX_BODY_BYTES=1099511627776", "ATTND_API_KEY=s3cret",
                "ATTND_CORS_ORIGIN=https://example.com", "ATTND_MAX_CONNECTIONS=100000",
                "ATTND_MAX_CONNECTIONS_PER_IP=32", "ATTND_CONNECTION_TIMEOUT=3600",
                "ATTND_ACCESS_LOG=off", "ATTND_AUTO_TRUNCATE=true", "ATTND_WORKERS=64",
                "ATTND_FORWARD_THREADS=256", "ATTND_QUEUE_SIZE=1000000",
                "ATTND_BATCH_TOKENS=1048576", "ATTND_BATCH_DELAY_MS=10000", "ATTND_SPIN_US=0",
                "ATTND_MAX_BATCH=1048576", "ATTND_MAX_SEQ_LEN=128",
                "ATTND_MAX_BATCH_TOKENS=2147483647", "ATTND_MAX_ATTENTION_BYTES=0",
                "ATTND_MODEL_NAME=tiny-v1.0_x", "ATTND_D_MODEL=64", "ATTND_N_HEADS=4",
                "ATTND_N_KV_HEADS=2", "ATTND_D_FF=96", "ATTND_N_LAYERS=3",
                "ATTND_ACTIVATION=gelu_tanh", "ATTND_NORM_FIRST=yes", "ATTND_LAYER_NORM_EPS=1e-6",
                "ATTND_BIAS=0", "ATTND_WEIGHTS=/models/m.safetensors",
                "ATTND_SEED=18446744073709551615"));
    assert_custom(&cfg);
    config_free(&cfg);
}
END_TEST

START_TEST(test_file_sets_every_field)
{
    const char *json = "{\"server\": {\"host\": \"127.0.0.1\", \"port\": 9000, \"threads\": 3,\n"
                       "  \"max_body_bytes\": 1099511627776, \"api_key\": \"s3cret\",\n"
                       "  \"cors_origin\": \"https://example.com\", \"max_connections\": 100000,\n"
                       "  \"max_connections_per_ip\": 32,\n"
                       "  \"connection_timeout\": 3600, \"access_log\": false,\n"
                       "  \"auto_truncate\": true},\n"
                       " \"compute\": {\"workers\": 64, \"forward_threads\": 256,\n"
                       "  \"queue_size\": 1000000, \"batch_tokens\": 1048576,\n"
                       "  \"batch_delay_ms\": 10000, \"spin_us\": 0},\n"
                       " \"limits\": {\"max_batch\": 1048576, \"max_seq_len\": 128,\n"
                       "  \"max_batch_tokens\": 2147483647, \"max_attention_bytes\": 0},\n"
                       " \"model\": {\"name\": \"tiny-v1.0_x\", \"d_model\": 64, \"n_heads\": 4,\n"
                       "  \"n_kv_heads\": 2, \"d_ff\": 96, \"n_layers\": 3,\n"
                       "  \"activation\": \"gelu_tanh\", \"norm_first\": true,\n"
                       "  \"layer_norm_eps\": 1e-6, \"bias\": false,\n"
                       "  \"weights\": \"/models/m.safetensors\",\n"
                       "  \"seed\": \"18446744073709551615\"}}\n";
    attnd_config cfg;
    load_ok(&cfg, json, NULL, NULL);
    assert_custom(&cfg);
    ck_assert_ptr_nonnull(cfg.config_path);
    ck_assert(strncmp(cfg.config_path, "/tmp/attnd-config-", 18) == 0);
    config_free(&cfg);
}
END_TEST

/* model.dtype: float32 by default; bfloat16 from a flag, a variable or the
 * file; auto follows a directory's torch_dtype (4.x) or dtype (5.x), and is
 * float32 for a seeded model; anything else named. */
START_TEST(test_dtype)
{
    attnd_config cfg;
    load_ok(&cfg, NULL, NULL, NULL);
    ck_assert_int_eq(cfg.model.dtype, ENC_DTYPE_FLOAT32);
    ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_FLOAT32);
    config_free(&cfg);
    load_ok(&cfg, NULL, ARGS("--dtype", "bfloat16"), NULL);
    ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_BFLOAT16);
    config_free(&cfg);
    load_ok(&cfg, "{\"model\": {\"dtype\": \"bfloat16\"}}", NULL, NULL);
    ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_BFLOAT16);
    config_free(&cfg);
    load_ok(&cfg, NULL, ARGS("--dtype", "int8"), NULL);
    ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_INT8);
    config_free(&cfg);
    load_ok(&cfg, "{\"model\": {\"dtype\": \"int8\"}}", NULL, ENV("ATTND_DTYPE=int8"));
    ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_INT8);
    config_free(&cfg);
    load_ok(&cfg, NULL, NULL, ENV("ATTND_DTYPE=auto"));
    ck_assert_int_eq(cfg.model.dtype, ENC_DTYPE_AUTO);
    ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_FLOAT32); /* a seeded model: float32 */
    config_free(&cfg);
    enc_error err;
    ck_assert_int_lt(load(&cfg, &err, NULL, ARGS("--dtype", "half"), NULL), 0);
    ck_assert_msg(strstr(err.message, "--dtype") &&
                      strstr(err.message, "float32, bfloat16, int8, auto"),
                  "%s", err.message);
    config_free(&cfg);

    /* directories: 4.x's torch_dtype, 5.x's dtype */
    static const struct {
        char *src; /* a string literal, as ARGS takes it */
        const char *from, *to;
    } dirs[] = {
        {TESTS_DIR "/fixtures/hf/bert_f16", "\"torch_dtype\": \"float16\"",
         "\"torch_dtype\": \"bfloat16\""},
        {TESTS_DIR "/fixtures/hf5/bert_base", "\"dtype\": \"float32\"", "\"dtype\": \"bfloat16\""},
    };
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char dir[] = "/tmp/attnd-dtype-XXXXXX", src[512], dst[64];
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(src, sizeof src, "%s/config.json", dirs[i].src);
        snprintf(dst, sizeof dst, "%s/config.json", dir);
        char text[8192] = {0};
        FILE *in = fopen(src, "r");
        ck_assert_ptr_nonnull(in);
        ck_assert_uint_lt(fread(text, 1, sizeof text - 1, in), sizeof text - 1);
        fclose(in);
        char *at = strstr(text, dirs[i].from);
        ck_assert_ptr_nonnull(at);
        FILE *f = fopen(dst, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "%.*s%s%s", (int)(at - text), text, dirs[i].to, at + strlen(dirs[i].from));
        fclose(f);
        load_ok(&cfg, NULL, ARGS("--model-dir", dir, "--dtype", "auto"), NULL);
        ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_BFLOAT16);
        config_free(&cfg);
        load_ok(&cfg, NULL, ARGS("--model-dir", dir), NULL); /* float32 unless asked */
        ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_FLOAT32);
        config_free(&cfg);
        char *given = dirs[i].src;
        load_ok(&cfg, NULL, ARGS("--model-dir", given, "--dtype", "auto"), NULL);
        ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_FLOAT32); /* float16, float32 */
        config_free(&cfg);
        load_ok(&cfg, NULL, ARGS("--model-dir", given, "--dtype", "bfloat16"), NULL);
        ck_assert_int_eq(cfg.model.hp.dtype, ENC_DTYPE_BFLOAT16);
        config_free(&cfg);
        unlink(dst);
        rmdir(dir);
    }
}
END_TEST

/* JSON numbers: integral reals are integers; seeds beyond 2^63 - 1 as strings. */
START_TEST(test_file_numbers)
{
    attnd_config cfg;
    load_ok(&cfg,
            "{\"server\": {\"port\": 8.0e3, \"max_body_bytes\": 2048.0},"
            " \"model\": {\"seed\": 9223372036854775807, \"layer_norm_eps\": 1,"
            " \"activation\": \"gelu\"}}",
            NULL, NULL);
    ck_assert_int_eq(cfg.server.port, 8000);
    ck_assert_uint_eq(cfg.server.max_body_bytes, 2048);
    ck_assert_uint_eq(cfg.model.seed, 9223372036854775807ull);
    ck_assert_float_eq(cfg.model.hp.layer_norm_eps, 1.0f);
    ck_assert_int_eq(cfg.model.hp.activation, ENC_ACT_GELU);
    config_free(&cfg);
    load_ok(&cfg, "{\"model\": {\"seed\": 1e19}}", NULL, NULL);
    ck_assert_uint_eq(cfg.model.seed, 10000000000000000000ull);
    config_free(&cfg);
    load_ok(&cfg, "{\"model\": {\"seed\": \"12345678901234567890\"}}", NULL, NULL);
    ck_assert_uint_eq(cfg.model.seed, 12345678901234567890ull);
    config_free(&cfg);
    /* An empty file object and empty sections change nothing. */
    load_ok(&cfg, "{}", NULL, NULL);
    assert_defaults(&cfg);
    config_free(&cfg);
    load_ok(&cfg, "{\"server\": {}, \"compute\": {}, \"limits\": {}, \"model\": {}}", NULL, NULL);
    assert_defaults(&cfg);
    config_free(&cfg);
}
END_TEST

/* ---- precedence ------------------------------------------------------------------ */

/* Every combination of file, variable and flag for server.port. */
START_TEST(test_precedence_all_combinations)
{
    for (int mask = 0; mask < 8; mask++) {
        bool file = mask & 1, env = mask & 2, flag = mask & 4;
        attnd_config cfg;
        load_ok(&cfg, file ? "{\"server\": {\"port\": 1111}}" : NULL,
                flag ? ARGS("--port", "3333") : NULL, env ? ENV("ATTND_PORT=2222") : NULL);
        int want = flag ? 3333 : env ? 2222 : file ? 1111 : 8080;
        ck_assert_msg(cfg.server.port == want, "file %d env %d flag %d: port %d, want %d", file,
                      env, flag, cfg.server.port, want);
        config_free(&cfg);
    }
}
END_TEST

/* The same for a string, with the file named by ATTND_CONFIG. */
START_TEST(test_precedence_strings_and_config_variable)
{
    char path[] = "/tmp/attnd-config-XXXXXX";
    write_temp(path, "{\"model\": {\"name\": \"from-file\", \"weights\": \"file.st\"}}");
    char cfg_env[64];
    snprintf(cfg_env, sizeof cfg_env, "ATTND_CONFIG=%s", path);
    attnd_config cfg;

    load_ok(&cfg, NULL, NULL, ENV(cfg_env));
    ck_assert_str_eq(cfg.model.name, "from-file");
    ck_assert_str_eq(cfg.model.weights, "file.st");
    ck_assert_str_eq(cfg.config_path, path);
    config_free(&cfg);

    load_ok(&cfg, NULL, NULL, ENV(cfg_env, "ATTND_MODEL_NAME=from-env"));
    ck_assert_str_eq(cfg.model.name, "from-env");
    ck_assert_str_eq(cfg.model.weights, "file.st");
    config_free(&cfg);

    load_ok(&cfg, NULL, ARGS("--model-name", "from-flag"),
            ENV(cfg_env, "ATTND_MODEL_NAME=from-env"));
    ck_assert_str_eq(cfg.model.name, "from-flag");
    config_free(&cfg);

    /* --config wins over ATTND_CONFIG; --config "" means no file at all. */
    load_ok(&cfg, "{\"model\": {\"name\": \"other-file\"}}", NULL, ENV(cfg_env));
    ck_assert_str_eq(cfg.model.name, "other-file");
    ck_assert_ptr_null(cfg.model.weights);
    config_free(&cfg);
    load_ok(&cfg, NULL, ARGS("--config", ""), ENV(cfg_env));
    ck_assert_str_eq(cfg.model.name, "encoder");
    ck_assert_ptr_null(cfg.config_path);
    config_free(&cfg);
    load_ok(&cfg, NULL, ARGS("--config="), ENV(cfg_env));
    ck_assert_ptr_null(cfg.config_path);
    config_free(&cfg);
    unlink(path);
}
END_TEST

START_TEST(test_last_flag_wins)
{
    attnd_config cfg;
    load_ok(&cfg, NULL, ARGS("--port", "1", "--port=2", "--norm-first", "--no-norm-first"), NULL);
    ck_assert_int_eq(cfg.server.port, 2);
    ck_assert(!cfg.model.hp.norm_first);
    config_free(&cfg);
}
END_TEST

/* An empty variable is unset: it neither overrides the file nor errs. */
START_TEST(test_empty_variable_is_unset)
{
    attnd_config cfg;
    load_ok(&cfg, "{\"server\": {\"api_key\": \"k\", \"port\": 1234}}", NULL,
            ENV("ATTND_API_KEY=", "ATTND_PORT=", "ATTND_HOST=", "ATTND_CONFIG_X=1"));
    ck_assert_str_eq(cfg.server.api_key, "k");
    ck_assert_int_eq(cfg.server.port, 1234);
    ck_assert_str_eq(cfg.server.host, "0.0.0.0");
    config_free(&cfg);
    load_ok(&cfg, NULL, NULL, ENV("ATTND_CONFIG="));
    assert_defaults(&cfg);
    ck_assert_ptr_null(cfg.config_path);
    config_free(&cfg);
}
END_TEST

/* Nullable strings: JSON null or an empty value from any source is null. */
START_TEST(test_nullable_strings)
{
    attnd_config cfg;
    load_ok(&cfg,
            "{\"server\": {\"api_key\": null, \"cors_origin\": \"\"}, \"model\": {\"weights\": "
            "null}}",
            NULL, NULL);
    ck_assert_ptr_null(cfg.server.api_key);
    ck_assert_ptr_null(cfg.server.cors_origin);
    ck_assert_ptr_null(cfg.model.weights);
    config_free(&cfg);
    load_ok(&cfg, "{\"server\": {\"api_key\": \"file-key\"}}", ARGS("--api-key", "", "--weights="),
            ENV("ATTND_API_KEY=env-key", "ATTND_WEIGHTS=w"));
    ck_assert_ptr_null(cfg.server.api_key);
    ck_assert_ptr_null(cfg.model.weights);
    config_free(&cfg);
    /* A value that starts with "--" is given with '='. */
    load_ok(&cfg, NULL, ARGS("--api-key=--not-a-flag", "--cors-origin", "*"), NULL);
    ck_assert_str_eq(cfg.server.api_key, "--not-a-flag");
    ck_assert_str_eq(cfg.server.cors_origin, "*");
    config_free(&cfg);
}
END_TEST

/* ---- n_kv_heads follows n_heads -------------------------------------------------- */

START_TEST(test_kv_heads_follow_heads)
{
    attnd_config cfg;
    load_ok(&cfg, NULL, ARGS("--n-heads", "4"), NULL);
    ck_assert_int_eq(cfg.model.hp.n_heads, 4);
    ck_assert_int_eq(cfg.model.hp.n_kv_heads, 4);
    config_free(&cfg);
    load_ok(&cfg, NULL, NULL, ENV("ATTND_N_HEADS=16"));
    ck_assert_int_eq(cfg.model.hp.n_kv_heads, 16);
    config_free(&cfg);
    load_ok(&cfg, "{\"model\": {\"n_heads\": 2}}", NULL, NULL);
    ck_assert_int_eq(cfg.model.hp.n_kv_heads, 2);
    config_free(&cfg);
    /* Set anywhere, n_kv_heads keeps its own value. */
    load_ok(&cfg, "{\"model\": {\"n_kv_heads\": 1}}", ARGS("--n-heads", "4"), NULL);
    ck_assert_int_eq(cfg.model.hp.n_heads, 4);
    ck_assert_int_eq(cfg.model.hp.n_kv_heads, 1);
    config_free(&cfg);
    load_ok(&cfg, NULL, ARGS("--n-heads", "4"), ENV("ATTND_N_KV_HEADS=2"));
    ck_assert_int_eq(cfg.model.hp.n_kv_heads, 2);
    config_free(&cfg);
    /* An explicit 8 with 4 heads is refused rather than silently lowered. */
    enc_error err;
    ck_assert_int_eq(
        load(&cfg, &err, "{\"model\": {\"n_kv_heads\": 8}}", ARGS("--n-heads", "4"), NULL),
        ENC_EINVAL);
    ck_assert_msg(strstr(err.message, "model: n_kv_heads (8)"), "%s", err.message);
    config_free(&cfg);
}
END_TEST

/* ---- booleans ------------------------------------------------------------------------ */

static struct {
    char *args[4];
    char *env[2];
    bool norm_first;
    int port; /* checks a following flag is still read */
} bool_cases[] = {
    {{"--norm-first"}, {0}, true, 8080},
    {{"--norm-first", "--port", "1"}, {0}, true, 1},
    {{"--norm-first=true"}, {0}, true, 8080},
    {{"--norm-first", "yes"}, {0}, true, 8080},
    {{"--norm-first", "ON"}, {0}, true, 8080},
    {{"--norm-first", "1", "--port=2"}, {0}, true, 2},
    {{"--norm-first=False"}, {0}, false, 8080},
    {{"--norm-first", "no"}, {0}, false, 8080},
    {{"--norm-first", "off"}, {0}, false, 8080},
    {{"--norm-first", "0"}, {0}, false, 8080},
    {{"--no-norm-first"}, {"ATTND_NORM_FIRST=true"}, false, 8080},
    {{0}, {"ATTND_NORM_FIRST=on"}, true, 8080},
    {{0}, {"ATTND_NORM_FIRST=TRUE"}, true, 8080},
    {{0}, {"ATTND_NORM_FIRST=1"}, true, 8080},
    {{"--norm-first"}, {"ATTND_NORM_FIRST=no"}, true, 8080},
};

START_TEST(test_bool_forms)
{
    attnd_config cfg;
    load_ok(&cfg, NULL, bool_cases[_i].args, bool_cases[_i].env);
    ck_assert_msg(cfg.model.hp.norm_first == bool_cases[_i].norm_first, "case %d", _i);
    ck_assert_int_eq(cfg.server.port, bool_cases[_i].port);
    config_free(&cfg);
}
END_TEST

START_TEST(test_bool_in_file)
{
    attnd_config cfg;
    load_ok(&cfg, "{\"model\": {\"norm_first\": true, \"bias\": false}}", NULL, NULL);
    ck_assert(cfg.model.hp.norm_first);
    ck_assert(!cfg.model.hp.bias);
    config_free(&cfg);
}
END_TEST

/* ---- actions ----------------------------------------------------------------------------- */

START_TEST(test_actions)
{
    attnd_config cfg;
    load_ok(&cfg, NULL, ARGS("--check-config"), NULL);
    ck_assert(cfg.check_config);
    ck_assert(!cfg.help && !cfg.version);
    config_free(&cfg);
    /* --help and --version work whatever the rest of the configuration says. */
    load_ok(&cfg, NULL, ARGS("--help", "--port", "abc"), ENV("ATTND_MAX_BATCH=0"));
    ck_assert(cfg.help);
    config_free(&cfg);
    load_ok(&cfg, NULL, ARGS("-h"), ENV("ATTND_CONFIG=/nonexistent/attnd.json"));
    ck_assert(cfg.help);
    config_free(&cfg);
    load_ok(&cfg, NULL, ARGS("--version", "--n-heads", "7"), NULL);
    ck_assert(cfg.version);
    ck_assert(!cfg.help);
    config_free(&cfg);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

/* Each invalid configuration and the text its message must contain.  File
 * cases are passed as --config FILE before the flags. */
/* clang-format off */
static struct {
    const char *json;
    char *args[6];
    char *env[3];
    const char *expect;
} error_cases[] = {
    /* flags: not a number, out of range, malformed */
    {NULL, {"--port", "abc"}, {0}, "--port: 'abc' is not an integer"},
    {NULL, {"--port=12abc"}, {0}, "--port: '12abc' is not an integer"},
    {NULL, {"--port", ""}, {0}, "--port: '' is not an integer"},
    {NULL, {"--port", " 80"}, {0}, "--port: ' 80' is not an integer"},
    {NULL, {"--port", "+80"}, {0}, "--port: '+80' is not an integer"},
    {NULL, {"--port", "0x50"}, {0}, "--port: '0x50' is not an integer"},
    {NULL, {"--port", "80.0"}, {0}, "--port: '80.0' is not an integer"},
    {NULL, {"--port", "65536"}, {0}, "--port: 65536 is outside 0..65535"},
    {NULL, {"--port=-1"}, {0}, "--port: -1 is outside 0..65535"},
    {NULL, {"--threads", "0"}, {0}, "--threads: 0 is outside 1..64"},
    {NULL, {"--max-body-bytes", "1023"}, {0}, "--max-body-bytes: 1023 is outside 1024..1099511627776"},
    {NULL, {"--max-body-bytes", "99999999999999999999999"}, {0}, "--max-body-bytes: 99999999999999999999999 is outside"},
    {NULL, {"--max-batch-tokens", "2147483648"}, {0}, "--max-batch-tokens: 2147483648 is outside 1..2147483647"},
    {NULL, {"--max-attention-bytes", "1099511627777"}, {0}, "--max-attention-bytes: 1099511627777 is outside 0..1099511627776"},
    {NULL, {"--seed", "-1"}, {0}, "--seed: -1 is outside 0..18446744073709551615"},
    {NULL, {"--seed", "18446744073709551616"}, {0}, "--seed: 18446744073709551616 is outside"},
    {NULL, {"--d-model", "0"}, {0}, "--d-model: 0 is outside 1..65536"},
    {NULL, {"--n-layers", "257"}, {0}, "--n-layers: 257 is outside 1..256"},
    {NULL, {"--layer-norm-eps", "abc"}, {0}, "--layer-norm-eps: 'abc' is not a number"},
    {NULL, {"--layer-norm-eps", "1e-5x"}, {0}, "--layer-norm-eps: '1e-5x' is not a number"},
    {NULL, {"--layer-norm-eps", "0"}, {0}, "--layer-norm-eps: 0 is not a positive number"},
    {NULL, {"--layer-norm-eps=-1e-5"}, {0}, "--layer-norm-eps: -1e-5 is not a positive number"},
    {NULL, {"--layer-norm-eps", "nan"}, {0}, "--layer-norm-eps: nan is not a positive number"},
    {NULL, {"--layer-norm-eps", "inf"}, {0}, "--layer-norm-eps: inf is not a positive number"},
    {NULL, {"--layer-norm-eps", "1e39"}, {0}, "--layer-norm-eps: 1e39 is too large for float32"},
    {NULL, {"--layer-norm-eps", "1e-50"}, {0}, "--layer-norm-eps: 1e-50 is too small for float32"},
    {NULL, {"--activation", "swish"}, {0}, "--activation: 'swish' is not one of relu, gelu, gelu_tanh"},
    {NULL, {"--access-log=maybe"}, {0}, "--access-log: 'maybe' is not a boolean"},
    {NULL, {"--host", ""}, {0}, "--host: '' must not be empty"},
    {NULL, {"--model-name", ""}, {0}, "--model-name: '' must not be empty"},
    {NULL, {"--model-name", "a/b"}, {0}, "--model-name: 'a/b' may contain only letters, digits"},
    {NULL, {"--model-name", "caf\xc3\xa9"}, {0}, "--model-name: 'caf"},
    {NULL, {"--model-name", ".."}, {0}, "--model-name: '..' must not be '.' or '..'"},
    {NULL, {"--model-name", "m0123456789012345678901234567890123456789012345678901234567890123"}, {0}, "is longer than 64 characters"},
    /* flags: their form */
    {NULL, {"--prot", "80"}, {0}, "unknown flag '--prot'"},
    {NULL, {"--prot=80"}, {0}, "unknown flag '--prot'"},
    {NULL, {"-p", "80"}, {0}, "unknown flag '-p'"},
    {NULL, {"--"}, {0}, "unknown flag '--'"},
    {NULL, {"--no-port"}, {0}, "unknown flag '--no-port'"},
    {NULL, {"--no-config"}, {0}, "unknown flag '--no-config'"},
    {NULL, {"--no-bias=1"}, {0}, "--no-bias takes no value"},
    {NULL, {"--help=yes"}, {0}, "--help takes no value"},
    {NULL, {"--check-config=1"}, {0}, "--check-config takes no value"},
    {NULL, {"serve"}, {0}, "unexpected argument 'serve'"},
    {NULL, {"--access-log", "maybe"}, {0}, "unexpected argument 'maybe'"},
    {NULL, {"--port"}, {0}, "--port: missing value"},
    {NULL, {"--weights", "--port", "1"}, {0}, "--weights: missing value"},
    {NULL, {"--config"}, {0}, "--config: missing value"},
    /* variables */
    {NULL, {0}, {"ATTND_MAX_BATCH=0"}, "ATTND_MAX_BATCH: 0 is outside 1..1048576"},
    {NULL, {0}, {"ATTND_PORT=http"}, "ATTND_PORT: 'http' is not an integer"},
    {NULL, {0}, {"ATTND_QUEUE_SIZE=1000001"}, "ATTND_QUEUE_SIZE: 1000001 is outside 1..1000000"},
    {NULL, {"--batch-tokens", "0"}, {0}, "--batch-tokens: 0 is outside 1..1048576"},
    {NULL, {0}, {"ATTND_BATCH_DELAY_MS=-1"}, "ATTND_BATCH_DELAY_MS: -1 is outside 0..10000"},
    {NULL, {"--spin-us", "1000001"}, {0}, "--spin-us: 1000001 is outside 0..1000000"},
    {NULL, {0}, {"ATTND_CONNECTION_TIMEOUT=0"}, "ATTND_CONNECTION_TIMEOUT: 0 is outside 1..3600"},
    {NULL, {0}, {"ATTND_ACCESS_LOG=nope"}, "ATTND_ACCESS_LOG: 'nope' is not a boolean"},
    {NULL, {0}, {"ATTND_ACTIVATION=GELU"}, "ATTND_ACTIVATION: 'GELU' is not one of"},
    {NULL, {0}, {"ATTND_LAYER_NORM_EPS=x"}, "ATTND_LAYER_NORM_EPS: 'x' is not a number"},
    {NULL, {0}, {"ATTND_MODEL_NAME=a b"}, "ATTND_MODEL_NAME: 'a b' may contain only"},
    {NULL, {0}, {"ATTND_CONFIG=/nonexistent/attnd.json"}, "config file /nonexistent/attnd.json: No such file or directory"},
    {NULL, {"--config", "/nonexistent/x.json"}, {0}, "config file /nonexistent/x.json: No such file or directory"},
    {NULL, {"--config", "/tmp"}, {0}, "config file /tmp: Is a directory"},
    /* hyperparameters together */
    {NULL, {"--n-heads", "6"}, {0}, "model: n_heads (6) must divide d_model (512)"},
    {NULL, {"--n-heads", "8", "--n-kv-heads", "3"}, {0}, "model: n_kv_heads (3) must divide n_heads (8)"},
    {NULL, {"--d-model", "4"}, {0}, "model: n_heads (8)"},
    /* the file: values */
    {"{\"model\": {\"d_model\": \"512\"}}", {0}, {0}, ": model.d_model: \"512\" is not an integer"},
    {"{\"model\": {\"d_model\": 512.5}}", {0}, {0}, ": model.d_model: 512.5 is not an integer"},
    {"{\"model\": {\"d_model\": null}}", {0}, {0}, ": model.d_model: null is not an integer"},
    {"{\"model\": {\"d_model\": true}}", {0}, {0}, ": model.d_model: true is not an integer"},
    {"{\"model\": {\"d_model\": [512]}}", {0}, {0}, ": model.d_model: [512] is not an integer"},
    {"{\"limits\": {\"max_batch\": 0}}", {0}, {0}, ": limits.max_batch: 0 is outside 1..1048576"},
    {"{\"server\": {\"port\": -1}}", {0}, {0}, ": server.port: -1 is outside 0..65535"},
    {"{\"server\": {\"port\": 7e4}}", {0}, {0}, ": server.port: 70000.0 is outside 0..65535"},
    {"{\"model\": {\"seed\": -1}}", {0}, {0}, ": model.seed: -1 is outside 0..18446744073709551615"},
    {"{\"model\": {\"seed\": \"12x\"}}", {0}, {0}, ": model.seed: \"12x\" is not an integer"},
    {"{\"server\": {\"access_log\": \"yes\"}}", {0}, {0}, ": server.access_log: \"yes\" is not a boolean"},
    {"{\"server\": {\"access_log\": 1}}", {0}, {0}, ": server.access_log: 1 is not a boolean"},
    {"{\"server\": {\"host\": 5}}", {0}, {0}, ": server.host: 5 is not a string"},
    {"{\"server\": {\"host\": null}}", {0}, {0}, ": server.host: null is not a string"},
    {"{\"server\": {\"host\": \"\"}}", {0}, {0}, ": server.host: \"\" must not be empty"},
    {"{\"server\": {\"api_key\": 5}}", {0}, {0}, ": server.api_key: 5 is not a string or null"},
    {"{\"model\": {\"weights\": false}}", {0}, {0}, ": model.weights: false is not a string or null"},
    {"{\"model\": {\"name\": null}}", {0}, {0}, ": model.name: null is not a string"},
    {"{\"model\": {\"name\": \"a/b\"}}", {0}, {0}, ": model.name: \"a/b\" may contain only"},
    {"{\"model\": {\"activation\": \"tanh\"}}", {0}, {0}, ": model.activation: \"tanh\" is not one of relu, gelu, gelu_tanh"},
    {"{\"model\": {\"activation\": 1}}", {0}, {0}, ": model.activation: 1 is not a string"},
    {"{\"model\": {\"layer_norm_eps\": \"1e-5\"}}", {0}, {0}, ": model.layer_norm_eps: \"1e-5\" is not a number"},
    {"{\"model\": {\"layer_norm_eps\": 0}}", {0}, {0}, ": model.layer_norm_eps: 0 is not a positive number"},
    /* the file: shape */
    {"{\"server\": {\"prot\": 80}}", {0}, {0}, ": unknown key 'server.prot'"},
    {"{\"model\": {\"d_model\": 64, \"heads\": 4}}", {0}, {0}, ": unknown key 'model.heads'"},
    {"{\"servr\": {\"port\": 80}}", {0}, {0}, ": unknown section 'servr'"},
    {"{\"port\": 80}", {0}, {0}, ": unknown section 'port'"},
    {"{\"server\": 80}", {0}, {0}, ": section 'server' is not an object"},
    {"[1, 2]", {0}, {0}, ": the top level is not an object"},
    {"", {0}, {0}, ": line 1, column 0: '[' or '{' expected near end of file"},
    {"{\"server\": {\"port\": 1, \"port\": 2}}", {0}, {0}, ": line 1, column 29: duplicate object key near '\"port\"'"},
    {"{\"model\": {\"n_heads\": 6}}", {0}, {0}, "model: n_heads (6) must divide d_model (512)"},
    /* control characters in a flag's name are shown as '?' (fuzz_config) */
    {NULL, {"--no\nsuch"}, {0}, "unknown flag '--no?such'"},
    {NULL, {"--po\trt=1"}, {0}, "unknown flag '--po?rt'"},
};
/* clang-format on */

START_TEST(test_error_named)
{
    attnd_config cfg;
    enc_error err;
    int rc = load(&cfg, &err, error_cases[_i].json, error_cases[_i].args, error_cases[_i].env);
    ck_assert_msg(rc < 0, "case %d (%s) loaded", _i, error_cases[_i].expect);
    ck_assert_int_eq(err.status, rc);
    ck_assert_msg(strstr(err.message, error_cases[_i].expect), "case %d: '%s' lacks '%s'", _i,
                  err.message, error_cases[_i].expect);
    /* One line, and file errors start with the file. */
    ck_assert_ptr_null(strchr(err.message, '\n'));
    if (error_cases[_i].expect[0] == ':')
        ck_assert_msg(strncmp(err.message, "config file /tmp/attnd-config-", 30) == 0, "%s",
                      err.message);
    /* A failed load leaves nothing to free, and freeing is still safe. */
    ck_assert_ptr_null(cfg.server.host);
    ck_assert_ptr_null(cfg.model.name);
    ck_assert_ptr_null(cfg.config_path);
    config_free(&cfg);
    config_free(&cfg);
}
END_TEST

START_TEST(test_syntax_error_position)
{
    attnd_config cfg;
    enc_error err;
    /* The stray '}' is line 2, column 25. */
    ck_assert_int_lt(load(&cfg, &err, "{\n  \"server\": {\"port\": 80,}\n}\n", NULL, NULL), 0);
    ck_assert_msg(strstr(err.message, "line 2, column 25: "), "%s", err.message);
    config_free(&cfg);
    ck_assert_int_lt(
        load(&cfg, &err, "{\"model\": {\"name\": \"x\"}\n\n  \"server\": {}}", NULL, NULL), 0);
    ck_assert_msg(strstr(err.message, "line 3, column "), "%s", err.message);
    config_free(&cfg);
}
END_TEST

/* The first error wins: the file is read before the variables and flags. */
START_TEST(test_first_error_wins)
{
    attnd_config cfg;
    enc_error err;
    ck_assert_int_lt(load(&cfg, &err, "{\"server\": {\"prot\": 1}}", ARGS("--port", "x"),
                          ENV("ATTND_THREADS=0")),
                     0);
    ck_assert_msg(strstr(err.message, "unknown key 'server.prot'"), "%s", err.message);
    ck_assert_int_lt(load(&cfg, &err, NULL, ARGS("--port", "x"), ENV("ATTND_THREADS=0")), 0);
    ck_assert_msg(strstr(err.message, "ATTND_THREADS: 0"), "%s", err.message);
    /* An unknown flag is found before anything is read. */
    ck_assert_int_lt(load(&cfg, &err, "{\"server\": {\"prot\": 1}}", ARGS("--bogus"), NULL), 0);
    ck_assert_msg(strstr(err.message, "unknown flag '--bogus'"), "%s", err.message);
    config_free(&cfg);
}
END_TEST

START_TEST(test_free_is_safe)
{
    attnd_config cfg = {0};
    config_free(&cfg);
    config_free(NULL);
    load_ok(&cfg, NULL, ARGS("--api-key", "k"), NULL);
    config_free(&cfg);
    config_free(&cfg);
    ck_assert_ptr_null(cfg.server.api_key);
}
END_TEST

/* ---- --help ------------------------------------------------------------------------------ */

START_TEST(test_help_lists_everything)
{
    /* clang-format off */
    static const char *const names[] = {
        "--host", "ATTND_HOST", "server.host",
        "--port", "ATTND_PORT", "server.port",
        "--threads", "ATTND_THREADS", "server.threads",
        "--max-body-bytes", "ATTND_MAX_BODY_BYTES", "server.max_body_bytes",
        "--api-key", "ATTND_API_KEY", "server.api_key",
        "--cors-origin", "ATTND_CORS_ORIGIN", "server.cors_origin",
        "--max-connections", "ATTND_MAX_CONNECTIONS", "server.max_connections",
        "--max-connections-per-ip", "ATTND_MAX_CONNECTIONS_PER_IP", "server.max_connections_per_ip",
        "--connection-timeout", "ATTND_CONNECTION_TIMEOUT", "server.connection_timeout",
        "--access-log", "--no-access-log", "ATTND_ACCESS_LOG", "server.access_log",
        "--auto-truncate", "--no-auto-truncate", "ATTND_AUTO_TRUNCATE", "server.auto_truncate",
        "--workers", "ATTND_WORKERS", "compute.workers",
        "--forward-threads", "ATTND_FORWARD_THREADS", "compute.forward_threads",
        "--queue-size", "ATTND_QUEUE_SIZE", "compute.queue_size",
        "--batch-tokens", "ATTND_BATCH_TOKENS", "compute.batch_tokens",
        "--batch-delay-ms", "ATTND_BATCH_DELAY_MS", "compute.batch_delay_ms",
        "--spin-us", "ATTND_SPIN_US", "compute.spin_us", "default 2000", "0..1000000",
        "--max-batch", "ATTND_MAX_BATCH", "limits.max_batch",
        "--max-seq-len", "ATTND_MAX_SEQ_LEN", "limits.max_seq_len",
        "--max-batch-tokens", "ATTND_MAX_BATCH_TOKENS", "limits.max_batch_tokens",
        "--max-attention-bytes", "ATTND_MAX_ATTENTION_BYTES", "limits.max_attention_bytes",
        "--model-name", "ATTND_MODEL_NAME", "model.name",
        "--d-model", "ATTND_D_MODEL", "model.d_model",
        "--n-heads", "ATTND_N_HEADS", "model.n_heads",
        "--n-kv-heads", "ATTND_N_KV_HEADS", "model.n_kv_heads",
        "--d-ff", "ATTND_D_FF", "model.d_ff",
        "--n-layers", "ATTND_N_LAYERS", "model.n_layers",
        "--activation", "ATTND_ACTIVATION", "model.activation",
        "--norm-first", "--no-norm-first", "ATTND_NORM_FIRST", "model.norm_first",
        "--layer-norm-eps", "ATTND_LAYER_NORM_EPS", "model.layer_norm_eps",
        "--bias", "--no-bias", "ATTND_BIAS", "model.bias",
        "--weights", "ATTND_WEIGHTS", "model.weights",
        "--seed", "ATTND_SEED", "model.seed",
        "--config", "ATTND_CONFIG", "--help", "-h", "--version", "--check-config", "Usage:",
        /* some defaults and ranges */
        "default 0.0.0.0", "default 8080", "0..65535", "default 67108864", "default 268435456",
        "default encoder", "default relu", "default 1e-5", "default null", "1..1048576",
        "default 2048", "default 4096", "default 65536",
    };
    /* clang-format on */
    char *text = config_help_text();
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        ck_assert_msg(strstr(text, names[i]), "--help lacks %s", names[i]);
    free(text);
}
END_TEST

/* ---- the settings that take null ------------------------------------------------------ */

/* Whether key is one of list's comma-separated names. */
static bool listed(const char *list, const char *key)
{
    const size_t n = strlen(key);
    for (const char *p = list; (p = strstr(p, key)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

/* --help lists the settings that take null, and the list is complete and
 * exact: each setting --help describes (its "      section.key; default"
 * line) is loaded from a file as null, and those that load are exactly the
 * ones listed.  A setting that takes null and is missing from the list (as
 * model.dir once was) fails here. */
START_TEST(test_help_lists_the_null_settings)
{
    char *text = config_help_text();
    ck_assert_ptr_nonnull(text);
    const char *from = strstr(text, "as null:"), *to = from ? strstr(from, ".  ") : NULL;
    ck_assert_msg(from && to, "--help has no list of the settings that take null:\n%s", text);
    char list[512];
    from += strlen("as null:");
    ck_assert_uint_lt((size_t)(to - from), sizeof list);
    memcpy(list, from, (size_t)(to - from));
    list[to - from] = '\0';
    for (char *c = list; *c; c++)
        if (*c == '\n')
            *c = ' ';
    static const char *const nullable[] = {
        "server.api_key",  "server.cors_origin", "model.weights",        "model.dir",
        "model.tokenizer", "model.score_tokens", "model.rerank_template"};
    for (size_t i = 0; i < sizeof nullable / sizeof *nullable; i++)
        ck_assert_msg(listed(list, nullable[i]), "--help's list '%s' lacks %s", list, nullable[i]);
    int tried = 0, took = 0;
    for (const char *p = text; (p = strstr(p, "\n      ")); p++) {
        const char *key = p + 7, *semi = strstr(key, "; default"), *eol = strchr(key, '\n');
        const size_t n = semi ? (size_t)(semi - key) : 0;
        if (!semi || (eol && semi > eol) || n >= 64 ||
            strspn(key, "abcdefghijklmnopqrstuvwxyz_.0123456789") != n || !memchr(key, '.', n))
            continue;
        char name[64], json[128];
        memcpy(name, key, n);
        name[n] = '\0';
        const char *dot = strchr(name, '.');
        snprintf(json, sizeof json, "{\"%.*s\": {\"%s\": null}}", (int)(dot - name), name, dot + 1);
        attnd_config cfg;
        enc_error err;
        const bool takes_null = load(&cfg, &err, json, NULL, NULL) == 0;
        config_free(&cfg);
        ck_assert_msg(takes_null == listed(list, name), "%s %s null, and --help's list '%s' %s it",
                      name, takes_null ? "takes" : "refuses", list, takes_null ? "lacks" : "names");
        tried++;
        took += takes_null;
    }
    ck_assert_msg(tried >= 40, "only %d settings found in --help", tried);
    ck_assert_int_eq(took, (int)(sizeof nullable / sizeof *nullable));
    free(text);
}
END_TEST

/* README.md's settings table names every setting's flag: each "  --flag"
 * line of --help (the commands --config, --check-config, --version and
 * --help aside) appears in README.md as `--flag`.  A setting added to the
 * table in config/config.c and not to the README (as server.drain_seconds
 * once was) fails here. */
START_TEST(test_readme_lists_every_setting)
{
    FILE *f = fopen(TESTS_DIR "/../README.md", "rb");
    ck_assert_msg(f, "cannot open README.md");
    static char readme[256 * 1024];
    const size_t n = fread(readme, 1, sizeof readme - 1, f);
    fclose(f);
    ck_assert_uint_lt(n, sizeof readme - 1);
    readme[n] = '\0';
    char *text = config_help_text();
    ck_assert_ptr_nonnull(text);
    int flags = 0;
    for (const char *p = text; (p = strstr(p, "\n  --")); p++) {
        const char *flag = p + 3;
        const size_t len = strspn(flag, "-abcdefghijklmnopqrstuvwxyz0123456789");
        char quoted[64];
        snprintf(quoted, sizeof quoted, "`%.*s`", (int)len, flag);
        if (!strcmp(quoted, "`--config`") || !strcmp(quoted, "`--check-config`") ||
            !strcmp(quoted, "`--version`") || !strcmp(quoted, "`--help`"))
            continue;
        ck_assert_msg(strstr(readme, quoted), "README.md's settings table lacks %s", quoted);
        flags++;
    }
    ck_assert_msg(flags >= 40, "only %d flags found in --help", flags);
    free(text);
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = timed_suite("config");
    TCase *tc = timed_case(s, "config", 60);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_dtype);
    tcase_add_test(tc, test_default_file_is_the_defaults);
    tcase_add_test(tc, test_flags_set_every_field);
    tcase_add_test(tc, test_variables_set_every_field);
    tcase_add_test(tc, test_file_sets_every_field);
    tcase_add_test(tc, test_file_numbers);
    tcase_add_test(tc, test_precedence_all_combinations);
    tcase_add_test(tc, test_precedence_strings_and_config_variable);
    tcase_add_test(tc, test_last_flag_wins);
    tcase_add_test(tc, test_empty_variable_is_unset);
    tcase_add_test(tc, test_nullable_strings);
    tcase_add_test(tc, test_kv_heads_follow_heads);
    tcase_add_loop_test(tc, test_bool_forms, 0, (int)(sizeof bool_cases / sizeof *bool_cases));
    tcase_add_test(tc, test_bool_in_file);
    tcase_add_test(tc, test_actions);
    tcase_add_loop_test(tc, test_error_named, 0, (int)(sizeof error_cases / sizeof *error_cases));
    tcase_add_test(tc, test_syntax_error_position);
    tcase_add_test(tc, test_first_error_wins);
    tcase_add_test(tc, test_free_is_safe);
    tcase_add_test(tc, test_help_lists_everything);
    tcase_add_test(tc, test_help_lists_the_null_settings);
    tcase_add_test(tc, test_readme_lists_every_setting);
    return s;
}
