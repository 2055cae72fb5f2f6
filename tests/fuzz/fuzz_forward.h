/* fuzz_forward.h - an accepted request's forward in the fuzz targets that
 * run one (fuzz_encode.c, fuzz_v2.c, fuzz_text.c), with what must hold for
 * it whatever the input. */
#ifndef ATTND_TESTS_FUZZ_FORWARD_H
#define ATTND_TESTS_FUZZ_FORWARD_H

#include "fuzz.h"
#include "protocol/encode_request.h"

/* Runs accepted request e (its outputs allocated) on m as the daemon's pool
 * does, into *res: e's shape is within ctx's limits; a forward that fails
 * fails as one the daemon answers 400 (ENC_ENUMERIC, ENC_EINVAL); one that
 * runs leaves every output, attention weight and head score finite.
 * Whether it ran: the target then renders its 200. */
static inline bool fuzz_forward(const enc_model *m, enc_workspace *ws, encode_request *e,
                                const api_ctx *ctx, enc_result *res)
{
    const int B = e->batch.B, L = e->batch.L;
    FUZZ_ASSERT(B >= 1 && B <= ctx->max_batch && L >= 1 && L <= ctx->max_seq_len &&
                    (long)B * L <= ctx->max_batch_tokens,
                "accepted shape [%d, %d] is outside the limits", B, L);
    *res = encode_request_result(e);
    enc_error err = {0};
    const int rc = enc_forward(m, ws, &e->batch, res, &err);
    if (rc < 0) {
        FUZZ_ASSERT(rc == ENC_ENUMERIC || rc == ENC_EINVAL, "forward failed: %d %s", rc,
                    err.message);
        return false;
    }
    const enc_hparams *hp = enc_model_hparams(m);
    FUZZ_ASSERT(fuzz_all_finite(e->out, (size_t)B * (size_t)L * (size_t)hp->d_model),
                "a non-finite output");
    for (int l = 0; l < hp->n_layers; l++)
        if (e->attn_mode != ENC_ATTN_NONE && e->attn[l])
            FUZZ_ASSERT(fuzz_all_finite(e->attn[l], encode_attention_floats(e, hp)),
                        "a non-finite attention weight in layer %d", l);
    if (res->head == ENC_HEAD_OUT_LOGITS || res->head == ENC_HEAD_OUT_SPLADE)
        FUZZ_ASSERT(fuzz_all_finite(res->logits, enc_head_floats(m, res->head, B, L)),
                    "a non-finite logit");
    return true;
}

#endif
