{
  "targets": [
    {
      "target_name": "strongroom_native",
      "sources": [
        "native/addon.c",
        "native/ecdsa.c",
        "native/threads.c",
        "native/aes-gcm.c",
        "native/audit-hmac.c",
        "native/blob-writer.c",
        "native/accept.c"
      ],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}
