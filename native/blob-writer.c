/*
 * Blob writes off the event loop (src/blob/threaded-write.ts, decision 0054). An upload's
 * bytes are handed over in batches; each batch runs on the threadpool, where its plaintext
 * is hashed (MD5 and SHA-256), the frames it completes are sealed (AES-256-GCM, read from
 * the plaintext pieces and written straight into the frame buffers, so nothing is copied
 * first), and the stored bytes are written to the file. The event loop only cuts the
 * stream into batches.
 *
 * create()               -> a writer: MD5 and SHA-256 under way
 * run(writer, fd, batch) -> Promise<undefined>; rejects with an Error whose `code` is the
 *                           errno's name (ENOSPC, EIO, ...) when the write fails. With fd -1
 *                           nothing is written: the caller stores `write` itself (the
 *                           PostgreSQL blob store's rows)
 *   batch = [hash, key, frames, outs, plain, write], all arrays of Buffers but key:
 *     hash   the plaintext to add to the digests, in order
 *     key    the frames' AES-256 key (32 bytes), or null when nothing is sealed
 *     frames per frame its nonce (12 bytes) followed by its associated data
 *     outs   per frame the buffer it is sealed into: ciphertext, then the 16-byte tag, so a
 *            frame takes length - 16 bytes of plaintext
 *     plain  the frames' plaintext, in order, taken frame after frame by those lengths
 *     write  what is written to the file at its current offset, in order, after sealing
 *            (with fd -1 left to the caller)
 *   The batch is held (a reference) until the promise settles: its buffers must not change
 *   meanwhile. One batch of a writer runs at a time; the caller waits for each.
 * digest(writer)         -> [md5 (16 bytes), sha256 (32 bytes)]; the writer is then spent
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "addon.h"
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <uv.h>

#define KEY 32
#define NONCE 12
#define TAG 16
#define BATCH_PARTS 6
/* Spans per writev call (Linux takes up to 1024). */
#define MAX_IOV 1024

typedef struct {
  EVP_MD_CTX *md5;
  EVP_MD_CTX *sha256;
  int busy;  /* a batch is running */
  int spent; /* digest() was called */
} Writer;

typedef struct {
  unsigned char *data;
  size_t len;
} Span;

typedef struct {
  size_t count;
  Span *spans;
} Spans;

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref batch; /* keeps the buffers alive while the job runs */
  Writer *writer;
  int fd;
  unsigned char *key; /* NULL: nothing sealed */
  Spans hash, frames, outs, plain, write;
  int failed_errno; /* write failure */
  int failed_cipher;
} Job;

static void writer_free(napi_env env, void *data, void *hint) {
  Writer *w = data;
  EVP_MD_CTX_free(w->md5);
  EVP_MD_CTX_free(w->sha256);
  free(w);
}

static Writer *writer_of(napi_env env, napi_value v) {
  void *p = NULL;
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_external) return NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  return p;
}

static napi_value Create(napi_env env, napi_callback_info info) {
  Writer *w = calloc(1, sizeof *w);
  if (w == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  w->md5 = EVP_MD_CTX_new();
  w->sha256 = EVP_MD_CTX_new();
  if (w->md5 == NULL || w->sha256 == NULL || EVP_DigestInit_ex(w->md5, EVP_md5(), NULL) != 1 ||
      EVP_DigestInit_ex(w->sha256, EVP_sha256(), NULL) != 1) {
    ERR_clear_error();
    writer_free(env, w, NULL);
    napi_throw_error(env, NULL, "digest set-up failed");
    return NULL;
  }
  napi_value out;
  if (napi_create_external(env, w, writer_free, NULL, &out) != napi_ok) {
    writer_free(env, w, NULL);
    return NULL;
  }
  return out;
}

static int buffer_span(napi_env env, napi_value v, Span *s) {
  bool is_buffer = false;
  void *p = NULL;
  if (napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer) return 0;
  if (napi_get_buffer_info(env, v, &p, &s->len) != napi_ok) return 0;
  s->data = p;
  return 1;
}

/* The Buffers of a JS array into spans (malloc'd); 0 when it is not an array of Buffers. */
static int spans_of(napi_env env, napi_value arr, Spans *out) {
  bool is_array = false;
  uint32_t n = 0;
  out->count = 0;
  out->spans = NULL;
  if (napi_is_array(env, arr, &is_array) != napi_ok || !is_array) return 0;
  if (napi_get_array_length(env, arr, &n) != napi_ok) return 0;
  if (n == 0) return 1;
  out->spans = malloc(n * sizeof(Span));
  if (out->spans == NULL) return 0;
  for (uint32_t i = 0; i < n; i++) {
    napi_value e;
    if (napi_get_element(env, arr, i, &e) != napi_ok || !buffer_span(env, e, &out->spans[i])) return 0;
  }
  out->count = n;
  return 1;
}

static void job_free(Job *job) {
  free(job->hash.spans);
  free(job->frames.spans);
  free(job->outs.spans);
  free(job->plain.spans);
  free(job->write.spans);
  free(job);
}

/* Seals the batch's frames from its plaintext; 1 on success, 0 when the plaintext does not fill them exactly. */
static int seal_frames(Job *job) {
  size_t piece = 0, at = 0; /* the next plaintext byte: piece index, offset in it */
  int len = 0;
  for (size_t f = 0; f < job->frames.count; f++) {
    Span meta = job->frames.spans[f], out = job->outs.spans[f];
    if (meta.len < NONCE || out.len < TAG) return 0;
    size_t want = out.len - TAG, done = 0;
    EVP_CIPHER_CTX *ctx = gcm_begin(job->key, meta.data, 1);
    if (ctx == NULL) return 0;
    if (meta.len > NONCE && EVP_CipherUpdate(ctx, NULL, &len, meta.data + NONCE, (int)(meta.len - NONCE)) != 1)
      return 0;
    while (done < want) {
      if (piece >= job->plain.count) return 0;
      const Span *p = &job->plain.spans[piece];
      size_t take = p->len - at;
      if (take > want - done) take = want - done;
      if (take > 0 && !gcm_update(ctx, out.data + done, p->data + at, take)) return 0;
      done += take;
      at += take;
      if (at == p->len) {
        piece++;
        at = 0;
      }
    }
    if (gcm_finish(ctx, out.data + want, 1) != 1) return 0;
  }
  /* Every plaintext byte went into a frame. */
  return piece == job->plain.count && at == 0;
}

/* Writes the spans at the file's offset, whole; 0 or the errno of the failure. */
static int write_spans(int fd, Spans *w) {
  struct iovec iov[MAX_IOV];
  size_t next = 0, at = 0; /* the first span not yet written whole, and how much of it is */
  while (next < w->count) {
    int n = 0;
    for (size_t i = next; i < w->count && n < (int)(sizeof iov / sizeof iov[0]); i++, n++) {
      size_t skip = i == next ? at : 0;
      iov[n].iov_base = w->spans[i].data + skip;
      iov[n].iov_len = w->spans[i].len - skip;
    }
    ssize_t r = writev(fd, iov, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    size_t left = (size_t)r;
    while (next < w->count && left >= w->spans[next].len - at) {
      left -= w->spans[next].len - at;
      next++;
      at = 0;
    }
    at += left;
  }
  return 0;
}

/* Hashes and seals the batch; 1 on success. OpenSSL's error queue is per thread: a failure's is cleared here. */
static int hash_and_seal(Job *job) {
  Writer *w = job->writer;
  for (size_t i = 0; i < job->hash.count; i++) {
    Span s = job->hash.spans[i];
    if (EVP_DigestUpdate(w->md5, s.data, s.len) != 1 || EVP_DigestUpdate(w->sha256, s.data, s.len) != 1) return 0;
  }
  return job->key == NULL || seal_frames(job);
}

static void execute(napi_env env, void *p) {
  Job *job = p;
  if (!hash_and_seal(job)) {
    ERR_clear_error();
    job->failed_cipher = 1;
    return;
  }
  if (job->fd >= 0) job->failed_errno = write_spans(job->fd, &job->write);
}

static void complete(napi_env env, napi_status status, void *p) {
  Job *job = p;
  job->writer->busy = 0;
  if (status != napi_ok || job->failed_cipher) {
    napi_value msg, err;
    napi_create_string_utf8(env, "sealing or hashing the upload failed", NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &err);
    napi_reject_deferred(env, job->deferred, err);
  } else if (job->failed_errno != 0) {
    napi_value msg, code, err;
    const char *name = uv_err_name(uv_translate_sys_error(job->failed_errno));
    char text[256];
    snprintf(text, sizeof text, "%s: %s, write", name, strerror(job->failed_errno));
    napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &msg);
    napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
    napi_create_error(env, code, msg, &err);
    napi_reject_deferred(env, job->deferred, err);
  } else {
    napi_value undef;
    napi_get_undefined(env, &undef);
    napi_resolve_deferred(env, job->deferred, undef);
  }
  napi_delete_reference(env, job->batch);
  napi_delete_async_work(env, job->work);
  job_free(job);
}

static napi_value Run(napi_env env, napi_callback_info info) {
  napi_value argv[3], parts[BATCH_PARTS], promise, name;
  size_t argc = 3;
  Writer *w;
  int32_t fd = -1;
  bool is_array = false;
  uint32_t n = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 3 ||
      (w = writer_of(env, argv[0])) == NULL || napi_get_value_int32(env, argv[1], &fd) != napi_ok || fd < -1 ||
      napi_is_array(env, argv[2], &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, argv[2], &n) != napi_ok || n != BATCH_PARTS) {
    napi_throw_type_error(env, NULL, "expected (writer, fd, [hash, key, frames, outs, plain, write])");
    return NULL;
  }
  if (w->busy || w->spent) {
    napi_throw_error(env, NULL, w->spent ? "the writer is spent" : "a batch of this writer is running");
    return NULL;
  }
  for (uint32_t i = 0; i < BATCH_PARTS; i++) napi_get_element(env, argv[2], i, &parts[i]);
  Job *job = calloc(1, sizeof *job);
  if (job == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  job->writer = w;
  job->fd = fd;
  napi_valuetype key_type;
  Span key = {NULL, 0};
  int ok = napi_typeof(env, parts[1], &key_type) == napi_ok &&
           (key_type == napi_null || (buffer_span(env, parts[1], &key) && key.len == KEY));
  ok = ok && spans_of(env, parts[0], &job->hash) && spans_of(env, parts[2], &job->frames) &&
       spans_of(env, parts[3], &job->outs) && spans_of(env, parts[4], &job->plain) &&
       spans_of(env, parts[5], &job->write) && job->frames.count == job->outs.count &&
       (key.data != NULL || job->frames.count == 0);
  if (!ok) {
    job_free(job);
    napi_throw_type_error(env, NULL, "expected a batch of Buffers (and a 32-byte key or null)");
    return NULL;
  }
  job->key = key.data;
  if (napi_create_reference(env, argv[2], 1, &job->batch) != napi_ok ||
      napi_create_promise(env, &job->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "strongroom:blob-write", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, execute, complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    job_free(job);
    napi_throw_error(env, NULL, "could not queue the write");
    return NULL;
  }
  w->busy = 1;
  return promise;
}

static napi_value Digest(napi_env env, napi_callback_info info) {
  napi_value argv[1], out, md5, sha256;
  size_t argc = 1;
  Writer *w;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1 ||
      (w = writer_of(env, argv[0])) == NULL) {
    napi_throw_type_error(env, NULL, "expected (writer)");
    return NULL;
  }
  if (w->busy || w->spent) {
    napi_throw_error(env, NULL, w->spent ? "the writer is spent" : "a batch of this writer is running");
    return NULL;
  }
  unsigned char m[16], s[32];
  unsigned int ml = 0, sl = 0;
  w->spent = 1;
  if (EVP_DigestFinal_ex(w->md5, m, &ml) != 1 || EVP_DigestFinal_ex(w->sha256, s, &sl) != 1 || ml != 16 ||
      sl != 32) {
    ERR_clear_error();
    napi_throw_error(env, NULL, "digest failed");
    return NULL;
  }
  napi_create_array_with_length(env, 2, &out);
  napi_create_buffer_copy(env, 16, m, NULL, &md5);
  napi_create_buffer_copy(env, 32, s, NULL, &sha256);
  napi_set_element(env, out, 0, md5);
  napi_set_element(env, out, 1, sha256);
  return out;
}

void blob_writer_export(napi_env env, napi_value exports) {
  napi_value o;
  napi_create_object(env, &o);
  export_function(env, o, "create", Create);
  export_function(env, o, "run", Run);
  export_function(env, o, "digest", Digest);
  napi_set_named_property(env, exports, "blobWriter", o);
}
