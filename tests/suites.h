/* suites.h - every Check suite of the test runner; check_main.c runs them all. */
#ifndef ATTND_TESTS_SUITES_H
#define ATTND_TESTS_SUITES_H

#include <check.h>

Suite *sha256_suite(void);
Suite *safetensors_suite(void);
Suite *hparams_suite(void);
Suite *model_suite(void);
Suite *attention_suite(void);
Suite *blockmask_suite(void);
Suite *csr_suite(void);
Suite *torch_suite(void);
Suite *naive_suite(void);
Suite *gemm_suite(void);
Suite *dtype_suite(void);
Suite *config_suite(void);
Suite *v1_fixtures_suite(void);
Suite *v1_requests_suite(void);
Suite *v1_embeddings_suite(void);
Suite *http_suite(void);
Suite *page_suite(void);
Suite *fuzz_suite(void);
Suite *edges_suite(void);
Suite *hostile_suite(void);
Suite *v2_suite(void);
Suite *checkpoint_suite(void);
Suite *modernbert_suite(void);
Suite *embed_suite(void);
Suite *tokenizer_suite(void);
Suite *text_suite(void);
Suite *pooling_suite(void);
Suite *spin_suite(void);
Suite *jsontext_suite(void);
Suite *framing_suite(void);
Suite *stream_suite(void);
Suite *bufpool_suite(void);
Suite *base64_suite(void);
Suite *jsonnum_suite(void);
Suite *extract_suite(void);
Suite *team_suite(void);
Suite *runtime_suite(void);

#endif
