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
 * sealRecord(key, plain, out)        -> encrypts plain into a record sealed whole (format 2):
 *                                       out = header (34 bytes, written by the caller, its
 *                                       last 12 the nonce and all of it the associated data)
 *                                       | ciphertext | tag, of exactly plain's length + 50
 * openRecord(key, stored, out)       -> 1 authentic (out holds the plaintext), 0 not (out
 *                                       zeroed), -2 internal failure; stored is such a
 *                                       record, out its length - 50
 * key: 32 bytes; nonce: 12 bytes; tag: 16 bytes.
 *
 * Each thread keeps one cipher context. It is set up once, and a call with the key of the
 * call before only sets the nonce, so records sealed or opened one after another under one
 * key pay the AES key schedule and the GHASH set-up once (decision 0052).
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
/* A record sealed whole: magic (4) | format (1) | 0 (1) | data key id (16) | nonce (12). */
#define RECORD_HEADER 34
#define RECORD_NONCE 22

/* One context per thread; whether it holds the cipher yet, and the key it was last given. */
static __thread EVP_CIPHER_CTX *thread_ctx;
static __thread int thread_ready;
static __thread unsigned char thread_key[KEY];

/* The thread's context, set to key and nonce for enc (1) or dec (0); NULL on failure. */
EVP_CIPHER_CTX *gcm_begin(const unsigned char *key, const unsigned char *nonce, int enc) {
  if (thread_ctx == NULL) thread_ctx = EVP_CIPHER_CTX_new();
  EVP_CIPHER_CTX *ctx = thread_ctx;
  if (ctx == NULL) return NULL;
  if (!thread_ready) {
    /* The first call fetches the cipher; later ones pass NULL and keep it. */
    if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce, enc) != 1) return NULL;
    memcpy(thread_key, key, KEY);
    thread_ready = 1;
    return ctx;
  }
  int same = CRYPTO_memcmp(thread_key, key, KEY) == 0;
  if (EVP_CipherInit_ex(ctx, NULL, NULL, same ? NULL : key, nonce, enc) != 1) {
    thread_ready = 0;
    return NULL;
  }
  if (!same) memcpy(thread_key, key, KEY);
  return ctx;
}

/* Runs len bytes from in to out (which may be in itself) through the started cipher. */
int gcm_update(EVP_CIPHER_CTX *ctx, unsigned char *out, const unsigned char *in, size_t len) {
  size_t done = 0;
  int n = 0;
  while (done < len) {
    int step = len - done > (1u << 30) ? (1 << 30) : (int)(len - done);
    if (EVP_CipherUpdate(ctx, out + done, &n, in + done, step) != 1 || n != step) return 0;
    done += (size_t)step;
  }
  return 1;
}

/* Ends the cipher: for sealing writes the tag, for opening checks it. 1 ok, 0 not authentic, -1 failure. */
int gcm_finish(EVP_CIPHER_CTX *ctx, unsigned char *tag, int enc) {
  unsigned char rest[16];
  int len = 0;
  if (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, tag) != 1) return -1;
  if (EVP_CipherFinal_ex(ctx, rest, &len) != 1) return enc ? -1 : 0;
  if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, tag) != 1) return -1;
  return 1;
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
  EVP_CIPHER_CTX *ctx = gcm_begin(a->key, a->nonce, enc);
  int len = 0;
  if (ctx == NULL) return -1;
  if (a->aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &len, a->aad, (int)a->aad_len) != 1) return -1;
  for (size_t i = 0; i < a->count; i++)
    if (!gcm_update(ctx, a->pieces[i].data, a->pieces[i].data, a->pieces[i].len)) return -1;
  return gcm_finish(ctx, a->tag, enc);
}

/* Seals (enc 1: in = plaintext, rec = the record) or opens (enc 0: rec = the record, out = plaintext) a record. */
static int run_record(const unsigned char *key, unsigned char *rec, size_t body, const unsigned char *in,
                      unsigned char *out, int enc) {
  EVP_CIPHER_CTX *ctx = gcm_begin(key, rec + RECORD_NONCE, enc);
  int len = 0;
  if (ctx == NULL) return -1;
  if (EVP_CipherUpdate(ctx, NULL, &len, rec, RECORD_HEADER) != 1) return -1;
  if (!gcm_update(ctx, out, in, body)) return -1;
  return gcm_finish(ctx, rec + RECORD_HEADER + body, enc);
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

/* (key, a, b): checks the sizes of a record call; sets the record, the plaintext and the body length. */
static int record_args(napi_env env, napi_callback_info info, int enc, unsigned char **key, unsigned char **rec,
                       unsigned char **plain, size_t *body) {
  napi_value argv[3];
  size_t argc = 3, a_len = 0, b_len = 0;
  unsigned char *a, *b;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 3 || !sized(env, argv[0], KEY, key) ||
      !buffer_of(env, argv[1], &a, &a_len) || !buffer_of(env, argv[2], &b, &b_len))
    return 0;
  /* Sealing: a = plaintext, b = record; opening: a = record, b = plaintext. */
  size_t plain_len = enc ? a_len : b_len, rec_len = enc ? b_len : a_len;
  if (rec_len < RECORD_HEADER + TAG || rec_len - RECORD_HEADER - TAG != plain_len) return 0;
  *rec = enc ? b : a;
  *plain = enc ? a : b;
  *body = plain_len;
  return 1;
}

/* Runs a record call (enc 1 seals, 0 opens) into *r; 0 with an exception pending when its arguments are wrong. */
static int record_call(napi_env env, napi_callback_info info, int enc, int *r) {
  unsigned char *key, *rec, *plain;
  size_t body;
  if (!record_args(env, info, enc, &key, &rec, &plain, &body)) {
    napi_throw_type_error(env, NULL,
                          enc ? "expected (key, plain, out), out 50 bytes longer than plain"
                              : "expected (key, stored, out), out 50 bytes shorter than stored");
    return 0;
  }
  *r = enc ? run_record(key, rec, body, plain, rec + RECORD_HEADER, 1)
           : run_record(key, rec, body, rec + RECORD_HEADER, plain, 0);
  ERR_clear_error();
  /* Nothing of a record that does not authenticate is left readable. */
  if (!enc && *r != 1) OPENSSL_cleanse(plain, body);
  return 1;
}

static napi_value SealRecord(napi_env env, napi_callback_info info) {
  int r = 0;
  if (!record_call(env, info, 1, &r)) return NULL;
  if (r != 1) {
    napi_throw_error(env, NULL, "AES-GCM sealing failed");
    return NULL;
  }
  napi_value out;
  napi_get_undefined(env, &out);
  return out;
}

static napi_value OpenRecord(napi_env env, napi_callback_info info) {
  int r = 0;
  if (!record_call(env, info, 0, &r)) return NULL;
  napi_value out;
  napi_create_int32(env, r == 1 ? 1 : r == 0 ? 0 : -2, &out);
  return out;
}

void aes_gcm_export(napi_env env, napi_value exports) {
  napi_value gcm;
  napi_create_object(env, &gcm);
  export_function(env, gcm, "seal", Seal);
  export_function(env, gcm, "open", Open);
  export_function(env, gcm, "hkdf", Hkdf);
  export_function(env, gcm, "sealRecord", SealRecord);
  export_function(env, gcm, "openRecord", OpenRecord);
  napi_set_named_property(env, exports, "aesGcm", gcm);
}
