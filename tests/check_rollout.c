/* check_rollout.c - attention rollout (core/model/rollout.c) against a
 * worked example computed by hand and against the product of the layers'
 * flow matrices in full, in double (the float64 reference), on random
 * weights with several heads, padded rows and a query without keys. */
#include "model/rollout.h"
#include "suites.h"
#include "test_util.h"
#include "timing.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Two layers of two tokens.  Layer 0's weights [[.5, .5], [0, 1]] flow as
 * [[.75, .25], [0, 1]]; layer 1's, the mean of two heads, [[.2, .8], [.6,
 * .4]], as [[.6, .4], [.3, .7]].  Their product, layer 1's times layer 0's:
 * [[.45, .55], [.225, .775]]. */
START_TEST(test_rollout_worked_example)
{
    const float a0[4] = {0.5f, 0.5f, 0.0f, 1.0f};
    const float a1[8] = {0.4f, 0.6f, 0.2f, 0.8f,  /* head 0 */
                         0.0f, 1.0f, 1.0f, 0.0f}; /* head 1 */
    const float a0h[8] = {0.5f, 0.5f, 0.0f, 1.0f, 0.5f, 0.5f, 0.0f, 1.0f};
    const float *attn[2] = {a0h, a1};
    double scratch[4], out[2];
    enc_rollout(attn, 2, 2, 4, 2, 2, 0, scratch, out);
    ck_assert_msg(fabs(out[0] - 0.45) < 1e-7 && fabs(out[1] - 0.55) < 1e-7, "row 0: %g %g", out[0],
                  out[1]);
    enc_rollout(attn, 2, 2, 4, 2, 2, 1, scratch, out);
    ck_assert_msg(fabs(out[0] - 0.225) < 1e-7 && fabs(out[1] - 0.775) < 1e-7, "row 1: %g %g",
                  out[0], out[1]);
    /* one layer, one head: the flow's row itself */
    const float *one[1] = {a0};
    enc_rollout(one, 1, 1, 4, 2, 2, 0, scratch, out);
    ck_assert(fabs(out[0] - 0.75) < 1e-7 && fabs(out[1] - 0.25) < 1e-7);
}
END_TEST

/* C = A . B, n x n, double. */
static void matmul(double *c, const double *a, const double *b, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < n; k++)
                s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }
}

/* Random softmax rows for 4 layers x 3 heads of a sequence of len 9 in a
 * padded [L = 12] layout (padding NaN: never read); query 5 of layer 2 sees
 * no key (all zero).  Every row of the rollout against the full product. */
START_TEST(test_rollout_matches_full_product)
{
    enum { NL = 4, H = 3, L = 12, LEN = 9 };
    uint64_t st = 11;
    float *w[NL];
    for (int l = 0; l < NL; l++) {
        w[l] = xcalloc((size_t)H * L * L, sizeof(float));
        for (size_t k = 0; k < (size_t)H * L * L; k++)
            w[l][k] = NAN;
        for (int h = 0; h < H; h++)
            for (int i = 0; i < LEN; i++) {
                float *row = w[l] + ((size_t)h * L + i) * L;
                double sum = 0.0;
                for (int j = 0; j < LEN; j++) {
                    row[j] = expf(2.0f * ((float)(splitmix(&st) >> 40) / (float)(1 << 24)));
                    sum += row[j];
                }
                for (int j = 0; j < LEN; j++)
                    row[j] = (l == 2 && i == 5) ? 0.0f : (float)(row[j] / sum);
            }
    }
    /* the reference: each layer's flow in full, multiplied out */
    double *R = xcalloc(LEN * LEN, sizeof *R), *F = xcalloc(LEN * LEN, sizeof *F);
    double *T = xcalloc(LEN * LEN, sizeof *T);
    for (int i = 0; i < LEN; i++)
        R[i * LEN + i] = 1.0;
    for (int l = NL - 1; l >= 0; l--) {
        for (int i = 0; i < LEN; i++) {
            double sum = 0.0;
            for (int j = 0; j < LEN; j++) {
                double a = 0.0;
                for (int h = 0; h < H; h++)
                    a += w[l][((size_t)h * L + i) * L + j];
                F[i * LEN + j] = 0.5 * a / H + (i == j ? 0.5 : 0.0);
                sum += F[i * LEN + j];
            }
            for (int j = 0; j < LEN; j++)
                F[i * LEN + j] /= sum;
        }
        matmul(T, R, F, LEN); /* R = Â_{n-1} ... Â_l */
        memcpy(R, T, LEN * LEN * sizeof *R);
    }
    const float *attn[NL] = {w[0], w[1], w[2], w[3]};
    double scratch[2 * LEN], out[LEN];
    for (int from = 0; from < LEN; from++) {
        enc_rollout(attn, NL, H, (size_t)L * L, LEN, L, from, scratch, out);
        double total = 0.0;
        for (int j = 0; j < LEN; j++) {
            ck_assert_msg(fabs(out[j] - R[from * LEN + j]) < 1e-12, "row %d, %d: %.17g vs %.17g",
                          from, j, out[j], R[from * LEN + j]);
            total += out[j];
        }
        ck_assert_msg(fabs(total - 1.0) < 1e-12, "row %d sums to %.17g", from, total);
    }
    for (int l = 0; l < NL; l++)
        free(w[l]);
    free(R);
    free(F);
    free(T);
}
END_TEST

Suite *rollout_suite(void)
{
    Suite *s = timed_suite("rollout");
    TCase *tc = timed_case(s, "core", 10);
    tcase_add_test(tc, test_rollout_worked_example);
    tcase_add_test(tc, test_rollout_matches_full_product);
    return s;
}
