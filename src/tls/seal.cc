#include "tls/seal.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <memory>
#include <vector>

namespace berth::tls {
namespace {

constexpr size_t kNonce = 12, kTag = 16;
constexpr std::string_view kVersion = "v1:";

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

Result<std::vector<unsigned char>> KeyBytes(std::string_view hex) {
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos)
    return Status::InvalidArgument("the unlock key is not 64 hex characters");
  std::vector<unsigned char> key(32);
  for (size_t i = 0; i < 32; ++i)
    key[i] = static_cast<unsigned char>(std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  return key;
}

std::string Base64(const std::vector<unsigned char>& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::vector<unsigned char>> Unbase64(std::string_view text) {
  if (text.size() % 4 != 0) return Status::InvalidArgument("the sealed text is not base64");
  std::vector<unsigned char> out(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return Status::InvalidArgument("the sealed text is not base64");
  size_t size = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;  // padding
  out.resize(size);
  return out;
}

}  // namespace

Result<std::string> Seal(std::string_view plaintext, std::string_view key_hex) {
  Result<std::vector<unsigned char>> key = KeyBytes(key_hex);
  if (!key.ok()) return key.status();
  std::vector<unsigned char> out(kNonce + plaintext.size() + kTag);
  if (RAND_bytes(out.data(), kNonce) != 1) return Status::Internal("no random bytes");
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0, tail = 0;
  if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key->data(), out.data()) != 1 ||
      EVP_EncryptUpdate(ctx.get(), out.data() + kNonce, &n,
                        reinterpret_cast<const unsigned char*>(plaintext.data()),
                        static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), out.data() + kNonce + n, &tail) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTag,
                          out.data() + kNonce + plaintext.size()) != 1)
    return Status::Internal("cannot seal");
  return std::string(kVersion) + Base64(out);
}

Result<std::string> Open(std::string_view sealed, std::string_view key_hex) {
  Result<std::vector<unsigned char>> key = KeyBytes(key_hex);
  if (!key.ok()) return key.status();
  if (sealed.substr(0, kVersion.size()) != kVersion)
    return Status::InvalidArgument("the sealed text is not of version v1");
  Result<std::vector<unsigned char>> data = Unbase64(sealed.substr(kVersion.size()));
  if (!data.ok()) return data.status();
  if (data->size() < kNonce + kTag) return Status::InvalidArgument("the sealed text is too short");
  const size_t size = data->size() - kNonce - kTag;
  std::string plain(size, '\0');
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int n = 0, tail = 0;
  const bool ok =
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key->data(), data->data()) == 1 &&
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &n,
                        data->data() + kNonce, static_cast<int>(size)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTag, data->data() + kNonce + size) ==
          1 &&
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()) + n, &tail) ==
          1;
  if (!ok)
    return Status::InvalidArgument(
        "cannot open the sealed text: the unlock key is not the one it was sealed with, or the "
        "text was changed");
  return plain;
}

std::string HashSecret(std::string_view secret) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace berth::tls
