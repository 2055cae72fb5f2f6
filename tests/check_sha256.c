/* check_sha256.c - the weights file's fingerprint (core/load/sha256.c, nettle's
 * SHA-256) against the FIPS 180-2 / NIST vectors and padding edge lengths
 * whose digests come from an independent implementation. */
#include "load/sha256.h"
#include "suites.h"
#include "timing.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Hex of the digest of len bytes at data, into hex. */
static void hex_of(const void *data, size_t len, char hex[SHA256_HEX_SIZE])
{
    sha256_hex(data, len, hex);
}

START_TEST(test_nist_vectors)
{
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopq"
         "rlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[SHA256_HEX_SIZE];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        hex_of(v[i].msg, strlen(v[i].msg), hex);
        ck_assert_msg(strcmp(hex, v[i].hex) == 0, "sha256(\"%s\") = %s, expected %s", v[i].msg, hex,
                      v[i].hex);
    }
}
END_TEST

START_TEST(test_million_a)
{
    const char *want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    const size_t n = 1000000;
    unsigned char *a = malloc(n);
    ck_assert_ptr_nonnull(a);
    memset(a, 'a', n);
    char hex[SHA256_HEX_SIZE];

    hex_of(a, n, hex);
    ck_assert_str_eq(hex, want);

    free(a);
}
END_TEST

/* The same digest from a file read a block (1 MiB) at a time: a million
 * 'a' then "abc" cross the block edges; an unreadable path is -1. */
START_TEST(test_file_blocks)
{
    char path[] = "/tmp/attnd_sha256_XXXXXX";
    const int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const size_t n = 3u << 20; /* three whole blocks and one byte more */
    unsigned char *a = malloc(n + 1);
    ck_assert_ptr_nonnull(a);
    for (size_t i = 0; i <= n; i++)
        a[i] = (unsigned char)(i * 131 + 7);
    ck_assert_int_eq(write(fd, a, n + 1), (ssize_t)(n + 1));
    close(fd);
    char want[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE];
    hex_of(a, n + 1, want);
    ck_assert_int_eq(sha256_file_hex(path, got), 0);
    ck_assert_str_eq(got, want);
    unlink(path);
    ck_assert_int_eq(sha256_file_hex(path, got), -1);
    free(a);
}
END_TEST

/* Lengths around the padding boundaries (55/56 bytes leave no room for the
 * length; 64 is a whole block), digests from an independent implementation. */
START_TEST(test_padding_edges)
{
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
    };
    unsigned char a[128];
    memset(a, 'a', sizeof a);
    char hex[SHA256_HEX_SIZE];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        hex_of(a, v[i].n, hex);
        ck_assert_msg(strcmp(hex, v[i].hex) == 0, "sha256('a' x %zu) = %s, expected %s", v[i].n,
                      hex, v[i].hex);
    }
}
END_TEST

Suite *sha256_suite(void)
{
    Suite *s = timed_suite("sha256");
    TCase *tc = timed_case(s, "sha256", 60);
    tcase_add_test(tc, test_nist_vectors);
    tcase_add_test(tc, test_million_a);
    tcase_add_test(tc, test_padding_edges);
    tcase_add_test(tc, test_file_blocks);
    return s;
}
