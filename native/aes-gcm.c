/*
 * AES-256-GCM in place, for stored state content (src/secrets/content-cipher.ts).
 *
 * node:crypto's cipher returns every update's output in a new buffer (in Node.js 20 it
 * allocates the input length plus a block, then a second buffer of the exact length and
 * copies into it), so sealing or opening a stream allocates as many bytes again as it
 * moves; on a busy server those bytes drive the garbage collector, which cost more than the
 * cipher itself. These functions encrypt or decrypt a frame's buffers where they are, with
 * OpenSSL linked from the running Node.js binary, and allocate nothing.
 *
 * seal(key, nonce, aad, pieces, tag) -> true; encrypts the pieces (Buffers, in order, one
 *                                       frame) in place and writes the 16-byte tag
 * open(key, nonce, aad, pieces, tag) -> 1 authentic (pieces now hold the plaintext),
 *                                       0 not authentic (pieces zeroed), -2 internal failure
 * hkdf(key, salt, infoBlock, out)    -> HKDF-SHA256 with one expand block (the info with its
 *                                       counter byte 1 appended) into out (32 bytes)
 * key: 32 bytes; nonce: 12 bytes; tag: 16 bytes.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "addon.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#define KEY 32
#define NONCE 12
#define TAG 16
#define MAX_PIECES 256

/* One context per thread, re-initialised with each frame's key and nonce. */
static __thread EVP_CIPHER_CTX *thread_ctx;

static EVP_CIPHER_CTX *context(void) {
  if (thread_ctx == NULL) thread_ctx = EVP_CIPHER_CTX_new();
  return thread_ctx;
}

typedef struct {
  unsigned char *data;
  size_t len;
} Piece;

static int buffer_of(napi_env env, napi_value v, unsigned char **out, size_t *len) {
  bool is_buffer = false;
  void *p = NULL;
  if (napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer) return 0;
  if (napi_get_buffer_info(env, v, &p, len) != napi_ok) return 0;
  *out = p;
  return 1;
}

static int sized(napi_env env, napi_value v, size_t want, unsigned char **out) {
  size_t len = 0;
  return buffer_of(env, v, out, &len) && len == want;
}

/* The Buffers of a JS array; 0 when it is not one or holds more than MAX_PIECES. */
static size_t pieces_of(napi_env env, napi_value arr, Piece *out) {
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, arr, &is_array) != napi_ok || !is_array) return 0;
  if (napi_get_array_length(env, arr, &n) != napi_ok || n > MAX_PIECES) return 0;
  for (uint32_t i = 0; i < n; i++) {
    napi_value e;
    if (napi_get_element(env, arr, i, &e) != napi_ok || !buffer_of(env, e, &out[i].data, &out[i].len)) return 0;
  }
  return n == 0 ? (size_t)-1 : n;
}

typedef struct {
  unsigned char *key, *nonce, *aad, *tag;
  size_t aad_len, count;
  Piece pieces[MAX_PIECES];
} FrameArgs;

static int frame_args(napi_env env, napi_callback_info info, FrameArgs *a) {
  napi_value argv[5];
  size_t argc = 5;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 5) return 0;
  if (!sized(env, argv[0], KEY, &a->key) || !sized(env, argv[1], NONCE, &a->nonce) ||
      !buffer_of(env, argv[2], &a->aad, &a->aad_len) || !sized(env, argv[4], TAG, &a->tag))
    return 0;
  size_t n = pieces_of(env, argv[3], a->pieces);
  if (n == 0) return 0;
  a->count = n == (size_t)-1 ? 0 : n;
  return 1;
}

/* Runs the frame through the cipher in place; 1 on success (for opening: authentic). */
static int run_frame(FrameArgs *a, int enc) {
  EVP_CIPHER_CTX *ctx = context();
  int len = 0;
  if (ctx == NULL || EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, a->key, a->nonce, enc) != 1) return -1;
  if (a->aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &len, a->aad, (int)a->aad_len) != 1) return -1;
  for (size_t i = 0; i < a->count; i++) {
    Piece *p = &a->pieces[i];
    size_t done = 0;
    while (done < p->len) {
      int step = p->len - done > (1u << 30) ? (1 << 30) : (int)(p->len - done);
      if (EVP_CipherUpdate(ctx, p->data + done, &len, p->data + done, step) != 1 || len != step) return -1;
      done += (size_t)step;
    }
  }
  if (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, a->tag) != 1) return -1;
  unsigned char rest[16];
  if (EVP_CipherFinal_ex(ctx, rest, &len) != 1) return enc ? -1 : 0;
  if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, a->tag) != 1) return -1;
  return 1;
}

/* Runs one frame call; NULL with an exception pending when its arguments are wrong. */
static FrameArgs *frame_call(napi_env env, napi_callback_info info, FrameArgs *a, int enc, int *r) {
  if (!frame_args(env, info, a)) {
    napi_throw_type_error(env, NULL, "expected (key, nonce, aad, pieces, tag)");
    return NULL;
  }
  *r = run_frame(a, enc);
  ERR_clear_error();
  return a;
}

static napi_value Seal(napi_env env, napi_callback_info info) {
  FrameArgs a;
  int r = 0;
  if (frame_call(env, info, &a, 1, &r) == NULL) return NULL;
  if (r != 1) {
    napi_throw_error(env, NULL, "AES-GCM sealing failed");
    return NULL;
  }
  napi_value out;
  napi_get_boolean(env, true, &out);
  return out;
}

static napi_value Open(napi_env env, napi_callback_info info) {
  FrameArgs a;
  int r = 0;
  if (frame_call(env, info, &a, 0, &r) == NULL) return NULL;
  /* Nothing of a frame that does not authenticate is left readable. */
  if (r != 1)
    for (size_t i = 0; i < a.count; i++) OPENSSL_cleanse(a.pieces[i].data, a.pieces[i].len);
  napi_value out;
  napi_create_int32(env, r == 1 ? 1 : r == 0 ? 0 : -2, &out);
  return out;
}

static napi_value Hkdf(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  size_t argc = 4;
  unsigned char *key, *salt, *info_block, *out;
  size_t key_len, salt_len, info_len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 4 ||
      !buffer_of(env, argv[0], &key, &key_len) || !buffer_of(env, argv[1], &salt, &salt_len) ||
      !buffer_of(env, argv[2], &info_block, &info_len) || !sized(env, argv[3], 32, &out)) {
    napi_throw_type_error(env, NULL, "expected (key, salt, infoBlock, out)");
    return NULL;
  }
  unsigned char prk[32];
  unsigned int len = 0;
  int ok = HMAC(EVP_sha256(), salt, (int)salt_len, key, key_len, prk, &len) != NULL && len == 32 &&
           HMAC(EVP_sha256(), prk, 32, info_block, info_len, out, &len) != NULL && len == 32;
  OPENSSL_cleanse(prk, sizeof prk);
  ERR_clear_error();
  if (!ok) {
    napi_throw_error(env, NULL, "HKDF failed");
    return NULL;
  }
  napi_value r;
  napi_get_undefined(env, &r);
  return r;
}

void aes_gcm_export(napi_env env, napi_value exports) {
  napi_value gcm;
  napi_create_object(env, &gcm);
  export_function(env, gcm, "seal", Seal);
  export_function(env, gcm, "open", Open);
  export_function(env, gcm, "hkdf", Hkdf);
  napi_set_named_property(env, exports, "aesGcm", gcm);
}
