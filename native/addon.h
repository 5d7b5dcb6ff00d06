/* The parts of the native addon (one shared object, strongroom_native.node). */
#ifndef STRONGROOM_ADDON_H
#define STRONGROOM_ADDON_H
#define NAPI_VERSION 8
#include <node_api.h>

/* Sets exports[name] to a new function. */
void export_function(napi_env env, napi_value exports, const char *name, napi_callback cb);

/* ecdsa.c: CSR checks, EC signatures and EC key batches. Returns 0 (with an exception pending) on failure. */
int ecdsa_export(napi_env env, napi_value exports);

/* aes-gcm.c: AES-256-GCM in place and HKDF-SHA256 for stored content (exports.aesGcm). */
void aes_gcm_export(napi_env env, napi_value exports);

/*
 * aes-gcm.c, for blob-writer.c: the calling thread's AES-256-GCM context set to key and nonce
 * (enc 1 seals, 0 opens; NULL on failure), bytes run through it (1 ok), and its end (the tag
 * written when sealing, checked when opening: 1 ok, 0 not authentic, -1 failure).
 */
typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;
EVP_CIPHER_CTX *gcm_begin(const unsigned char *key, const unsigned char *nonce, int enc);
int gcm_update(EVP_CIPHER_CTX *ctx, unsigned char *out, const unsigned char *in, size_t len);
int gcm_finish(EVP_CIPHER_CTX *ctx, unsigned char *tag, int enc);

/* blob-writer.c: an upload's hashing, sealing and file writes on the threadpool (exports.blobWriter). */
void blob_writer_export(napi_env env, napi_value exports);

/* audit-hmac.c: HMAC-SHA256 of audit entry values under a device's salt (exports.auditHmac). */
void audit_hmac_export(napi_env env, napi_value exports);

/* threads.c: scheduling policy of this process's threads. */
void threads_export(napi_env env, napi_value exports);

/* accept.c: the connections waiting on a listening socket, taken at once (exports.acceptPending). */
void accept_export(napi_env env, napi_value exports);

#endif
