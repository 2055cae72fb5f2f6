/* rollout.c - attention rollout (rollout.h): row `from` of the product of
 * the layers' flows, carried as one vector from the last layer down, so a
 * sequence costs n_layers x heads x len^2, never a len x len product. */
#include "model/rollout.h"

#include <string.h>

void enc_rollout(const float *const *attn, int n_layers, int heads, size_t head_stride, int len,
                 int ld, int from, double *scratch, double *out)
{
    double *row = scratch, *next = scratch + len;
    memset(out, 0, (size_t)len * sizeof *out);
    out[from] = 1.0; /* e_from: the rollout's row `from` is e_from^T Â_{n-1} ... Â_0 */
    for (int l = n_layers - 1; l >= 0; l--) {
        memset(next, 0, (size_t)len * sizeof *next);
        for (int i = 0; i < len; i++) {
            if (out[i] == 0.0)
                continue;
            /* row i of Â_l: the heads' mean plus the identity, halved and
             * renormalised (the mean's row sums to 1, or 0 for a query
             * without keys) */
            double sum = 1.0;
            for (int j = 0; j < len; j++) {
                double a = 0.0;
                for (int h = 0; h < heads; h++)
                    a += attn[l][(size_t)h * head_stride + (size_t)i * ld + j];
                row[j] = a / heads;
                sum += row[j];
            }
            row[i] += 1.0;
            for (int j = 0; j < len; j++)
                next[j] += out[i] * row[j] / sum;
        }
        memcpy(out, next, (size_t)len * sizeof *out);
    }
}
