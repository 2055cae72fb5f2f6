/* fuzz_config.c - fuzz target: the configuration loader.  The input up to
 * its first NUL byte is the JSON config file (read from a memfd through
 * --config); each NUL-separated piece after it is an environment entry when
 * it starts with "ATTND_", a command-line argument otherwise.  Pieces that
 * could name another file (containing "config") are dropped, so the target
 * never reads anything but its input.  See fuzz.h. */
#include "fuzz.h"

#include "config/config.h"

#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_PIECES 32

int fuzz_config(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    size_t file_len = 0;
    while (file_len < size && text[file_len] != '\0')
        file_len++;

    int fd = memfd_create("fuzz-config", 0);
    if (fd < 0)
        return 0;
    for (size_t off = 0; off < file_len;) {
        ssize_t n = write(fd, text + off, file_len - off);
        FUZZ_ASSERT(n > 0, "writing the memfd failed");
        off += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    /* The tail, as NUL-terminated copies. */
    char *tail = malloc(size - file_len + 1);
    FUZZ_ASSERT(tail != NULL, "out of memory");
    memcpy(tail, text + file_len, size - file_len);
    tail[size - file_len] = '\0';
    char *argv[MAX_PIECES + 4], *envp[MAX_PIECES + 1];
    int argc = 0, envc = 0;
    argv[argc++] = (char *)"attnd";
    argv[argc++] = (char *)"--config";
    argv[argc++] = path;
    for (size_t i = 1; i < size - file_len + 1 && argc + envc < MAX_PIECES;) {
        char *piece = tail + i;
        size_t n = strlen(piece);
        i += n + 1;
        if (strcasestr(piece, "config"))
            continue;
        if (strncmp(piece, "ATTND_", 6) == 0)
            envp[envc++] = piece;
        else
            argv[argc++] = piece;
    }
    argv[argc] = NULL;
    envp[envc] = NULL;

    attnd_config cfg;
    enc_error err = {0};
    if (config_load(&cfg, argc, argv, envp, &err) < 0) {
        FUZZ_ASSERT(err.message[0], "a refusal without a message");
        FUZZ_ASSERT(strchr(err.message, '\n') == NULL, "a message of more than one line: %s",
                    err.message);
    } else if (!cfg.help && !cfg.version) {
        /* Accepted: the settings are in range and the model is valid. */
        enc_error hp_err = {0};
        FUZZ_ASSERT(enc_hparams_validate(&cfg.model.hp, &hp_err) == 0, "%s", hp_err.message);
        FUZZ_ASSERT(cfg.server.host && cfg.server.host[0], "no host");
        FUZZ_ASSERT(cfg.server.port >= 0 && cfg.server.port <= 65535, "port %d", cfg.server.port);
        FUZZ_ASSERT(cfg.server.threads >= 1 && cfg.server.max_connections >= 1 &&
                        cfg.server.connection_timeout >= 1,
                    "threads %d, max_connections %d, connection_timeout %d", cfg.server.threads,
                    cfg.server.max_connections, cfg.server.connection_timeout);
        FUZZ_ASSERT(cfg.compute.workers >= 1 && cfg.compute.queue_size >= 1 &&
                        cfg.limits.max_batch >= 1 && cfg.limits.max_seq_len >= 1 &&
                        cfg.limits.max_batch_tokens >= 1,
                    "a count below 1");
        FUZZ_ASSERT(cfg.model.name && cfg.model.name[0], "no model name");
    }
    config_free(&cfg);
    free(tail);
    close(fd);
    return 0;
}

FUZZ_LIBFUZZER_ENTRY(fuzz_config)
