/* rollout.h - attention rollout (Abnar & Zuidema, "Quantifying Attention
 * Flow in Transformers", 2020): how much each input token contributes to
 * one token's last-layer representation, through every layer's attention
 * and the residual connections.  With A_l a layer's weights averaged over
 * heads, each layer's flow is Â_l = (A_l + I) / 2, rows renormalised to sum
 * 1 (a query that sees no key keeps its own row), and the rollout is the
 * product Â_{n-1} ... Â_1 Â_0; the relevance of token `from` is its row.
 *
 *     double rel[len], scratch[2 * len];
 *     enc_rollout(attn, n_layers, heads, L * L, len, L, 0, scratch, rel);   // the first token's
 */
#ifndef ATTND_ROLLOUT_H
#define ATTND_ROLLOUT_H

#include <stddef.h>

/* out (len) = row `from` of one sequence's rollout.  attn[l] holds layer l's
 * weights: heads blocks head_stride floats apart, each (len, len) with rows
 * ld floats apart (heads 1: the mean over heads already).  In double
 * throughout; the entries sum to 1.  scratch: 2 * len doubles. */
void enc_rollout(const float *const *attn, int n_layers, int heads, size_t head_stride, int len,
                 int ld, int from, double *scratch, double *out);

#endif
