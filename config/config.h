/* config.h - the daemon's settings: one validated struct made from
 * command-line flags > ATTND_* environment variables > a JSON config file >
 * built-in defaults (docs/contract.md section 1; every setting in
 * docs/configuration.md).
 *
 * Every setting is one row of CONFIG_SETTINGS in config.c: its JSON key
 * ("server.port"), flag (--port), variable (ATTND_PORT), type, default and
 * description; --help, the parsers and docs/configuration.md follow that
 * table.  Like core/, this module never prints or exits.
 *
 *     attnd_config cfg;
 *     enc_error err = {0};
 *     if (config_load(&cfg, argc, argv, environ, &err) < 0) {
 *         fprintf(stderr, "attnd: %s\n", err.message);   // names the setting
 *         return 2;
 *     }
 *     ...
 *     config_free(&cfg);
 */
#ifndef ATTND_CONFIG_H
#define ATTND_CONFIG_H

#include "encoder.h"
#include "model/pooling.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct attnd_config {
    struct {
        char *host;              /* "0.0.0.0" */
        int port;                /* 8080; 0 = an ephemeral port */
        int threads;             /* HTTP threads, 2 */
        int tokenize_threads;    /* threads parsing large bodies, 1; 0: the HTTP threads */
        bool tokenize_idle;      /* those threads at SCHED_IDLE, false (nice 10) */
        size_t max_body_bytes;   /* 67108864 */
        char *api_key;           /* NULL = no authentication */
        char *cors_origin;       /* NULL = no CORS headers */
        int max_connections;     /* 2048 */
        int max_connections_per_ip; /* from one client address; 0 = no limit */
        int connection_timeout;  /* seconds a connection may stay idle, 30 */
        int drain_seconds;       /* after SIGTERM: serving with readiness down, 0 */
        bool access_log;         /* one line per request on stderr, true */
        bool auto_truncate;      /* a text over the token limit cut where a request does not
                                    say "truncate", false */
    } server;
    struct {
        int workers;             /* forwards running at once, 1 */
        int forward_threads;     /* threads each forward splits its ops over, 2 */
        int queue_size;          /* requests waiting for a worker before 429, 64 */
        int batch_tokens;        /* dynamic batching: tokens one forward takes at most, 8192 */
        int batch_delay_ms;      /* dynamic batching: wait for more requests, 0 */
        int short_tokens;        /* requests of at most this many tokens run first, 64; 0 = off */
        int spin_us;             /* idle-priority spinning after each hand-off, 2000; 0 = off */
    } compute;
    struct {
        int max_batch;           /* 64 */
        int max_seq_len;         /* 4096 */
        long max_batch_tokens;   /* B * L at most, 65536 */
        size_t max_attention_bytes; /* float32 bytes of attention in a response, 268435456 */
        size_t max_logits_bytes;    /* float32 bytes of head logits in a response, 268435456 */
    } limits;
    struct {
        char *name;              /* "encoder" */
        enc_hparams hp;          /* docs/configuration.md's defaults */
        char *weights;           /* NULL = build from seed */
        char *dir;               /* a Hugging Face directory; NULL = none */
        char *tokenizer;         /* tokenizer.json; NULL = dir's, when it has one */
        char *score_tokens;      /* "yes,no": a causal LM as a reranker; NULL = dir's
                                    LogitScore module, else none */
        char *rerank_template;   /* pairs made one text; NULL = auto */
        enc_pooling pooling;     /* sentence embeddings; ENC_POOL_AUTO = dir's modules */
        int normalize;           /* -1 auto (dir's modules, else 1), 0, 1 */
        enc_dtype dtype;         /* the Linears' as asked: auto = the checkpoint's; hp.dtype
                                    holds it resolved */
        bool first_attn_norm;    /* true; false = hp.first_norm_identity */
        uint64_t seed;           /* 0 */
    } model;
    char *config_path;           /* --config / ATTND_CONFIG, or NULL */
    bool help;                   /* --help given */
    bool version;                /* --version given */
    bool check_config;           /* --check-config given */
} attnd_config;

/* Fills cfg from defaults, then the config file (--config or ATTND_CONFIG),
 * then envp's ATTND_* variables, then argv's flags, and validates the result
 * (ranges, enc_hparams_validate).  Returns 0, or ENC_EINVAL with err naming
 * the setting and its source ("--port: 'abc' is not an integer",
 * "ATTND_MAX_BATCH: 0 is outside 1..1048576", "config file x.json: unknown key
 * 'server.prot'").  cfg is always safe to config_free afterwards. */
int config_load(attnd_config *cfg, int argc, char **argv, char **envp, enc_error *err);

/* Releases the strings cfg owns; safe on a zeroed or failed cfg. */
void config_free(attnd_config *cfg);

/* The --help text: usage, then every setting with its flag, variable,
 * JSON key and default.  Owned by the caller (free). */
char *config_help_text(void);

#endif
