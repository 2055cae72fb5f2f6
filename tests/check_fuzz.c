/* check_fuzz.c - replays the fuzz corpora through the fuzz targets' entry
 * points on every make test (no libFuzzer needed): the regression corpus of
 * inputs that once crashed a target (tests/fuzz/regress/<target>/), the
 * committed seeds (tests/fuzz/seeds/<target>/) and the fixture directories
 * the seeds are taken from.  An input that crashes, leaks (valgrind, ASan)
 * or breaks a target's properties fails the test. */
#include "fuzz/fuzz.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FUZZ_DIR TESTS_DIR "/fuzz"
#define MAX_DIRS 5

static const struct {
    const char *name;
    int (*entry)(const uint8_t *, size_t);
    const char *dirs[MAX_DIRS]; /* besides regress/<name> and seeds/<name> */
    int min_inputs;             /* so a lost corpus is noticed */
} targets[] = {
    {"encode", fuzz_encode, {TESTS_DIR "/fixtures/requests/invalid"}, 80},
    {"safetensors",
     fuzz_safetensors,
     {TESTS_DIR "/fixtures/safetensors/good", TESTS_DIR "/fixtures/safetensors/bad",
      TESTS_DIR "/fixtures/safetensors/model"},
     50},
    {"config", fuzz_config, {NULL}, 5},
    {"v2", fuzz_v2, {NULL}, 5},
    {"tokenizer", fuzz_tokenizer, {NULL}, 30},
    {"text", fuzz_text, {NULL}, 17},
};

#define N_TARGETS ((int)(sizeof targets / sizeof *targets))

/* Reads path into an allocation of exactly its size (so ASan sees a read
 * past the end); *size is set.  NULL on error. */
static uint8_t *read_exact(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode)) {
        *size = (size_t)st.st_size;
        buf = malloc(*size ? *size : 1);
        if (buf && fread(buf, 1, *size, fp) != *size) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(fp);
    return buf;
}

/* Runs every regular file of dir (but dotfiles and README*) through entry.
 * Returns how many ran; -1 when dir cannot be opened. */
static int replay_dir(const char *dir, int (*entry)(const uint8_t *, size_t))
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t size = 0;
        uint8_t *buf = read_exact(path, &size);
        if (!buf)
            continue; /* a subdirectory */
        entry(buf, size);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(test_replay_corpus)
{
    char dir[512];
    const int t = _i;
    int total = 0, n;
    /* The regression corpus must exist (it may be empty but for README). */
    snprintf(dir, sizeof dir, "%s/regress/%s", FUZZ_DIR, targets[t].name);
    n = replay_dir(dir, targets[t].entry);
    ck_assert_msg(n >= 0, "no regression corpus %s", dir);
    total += n;
    /* Seeds of their own (safetensors takes its seeds from the fixtures). */
    snprintf(dir, sizeof dir, "%s/seeds/%s", FUZZ_DIR, targets[t].name);
    n = replay_dir(dir, targets[t].entry);
    total += n > 0 ? n : 0;
    for (int k = 0; k < MAX_DIRS && targets[t].dirs[k]; k++) {
        n = replay_dir(targets[t].dirs[k], targets[t].entry);
        ck_assert_msg(n > 0, "no inputs in %s", targets[t].dirs[k]);
        total += n;
    }
    ck_assert_msg(total >= targets[t].min_inputs, "%s: only %d inputs replayed, want %d",
                  targets[t].name, total, targets[t].min_inputs);
}
END_TEST

Suite *fuzz_suite(void)
{
    Suite *s = timed_suite("fuzz");
    TCase *tc = timed_case(s, "replay", 60);
    tcase_add_loop_test(tc, test_replay_corpus, 0, N_TARGETS);
    return s;
}
