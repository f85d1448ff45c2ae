// EtcdClient: calls etcd's v3 JSON gateway (etcd 3.4, the Debian package)
// with cpp-httplib, over HTTPS when given etcd's CA (and then with a client
// certificate when given one, for etcd's --client-cert-auth), else plain
// HTTP: the one place that knows the gateway's wire shapes (docs/ha.md,
// "How it works": the JSON gateway).
//
// Unary calls (`Call`) go to the endpoint that answered last; a call that
// certainly had no effect (the connection failed, or the member has no
// leader) moves on to the next endpoint, for up to `retry_for`. So does one
// on a kept-alive connection that its member closed (it stopped) the moment
// the request went out. Any other
// failure is returned: a write that timed out may have been applied, so
// only its caller can decide whether to try again (a conditioned write
// retried would see its own effect as a conflict).
//
// Streams (`Stream`, for watches) hold one connection each and run on the
// caller's thread until the receiver says stop, the connection breaks or
// `Cancel` is called from another thread.
//
// Errors: Unavailable for connection failures and etcd's 5xx answers (the
// message names the endpoint and etcd's words), InvalidArgument for its 4xx
// (a compacted revision, too many operations in a transaction).
//
// Thread-safe: each call takes an idle connection from a small pool.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace httplib {
class Client;
}

namespace berth::store {

using EtcdJson = nlohmann::json;

struct EtcdClientOptions {
  // "host:port" of the members (at least one).
  std::vector<std::string> endpoints;
  // How long one request may take, in seconds (default 5).
  int request_timeout_seconds = 5;
  // How long a call keeps trying other members when none answers or has a
  // leader (default 10 s: etcd elects a new leader within about a second
  // of its default election timeout, more on a loaded machine).
  std::chrono::milliseconds retry_for{10000};
  // PEM files, as etcdctl's --cacert, --cert and --key (default: none).
  // With ca_file, every call is HTTPS and etcd's certificate must chain to
  // it and name the endpoint's host; cert_file and key_file (both or
  // neither) are the certificate berthd presents. Read at each new
  // connection, so renewed files are picked up.
  std::string ca_file, cert_file, key_file;
};

// Base64 (standard alphabet, padded), as the gateway encodes bytes.
std::string Base64Encode(std::string_view bytes);
// nullopt when `text` is not base64.
std::optional<std::string> Base64Decode(std::string_view text);
// The gateway's int64 fields are JSON strings ("41"); absent means 0.
int64_t EtcdInt(const EtcdJson& object, const char* field);
// The first key after every key that starts with `prefix` (a range_end).
std::string PrefixEnd(std::string prefix);

class EtcdClient {
 public:
  explicit EtcdClient(EtcdClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // POSTs `body` to `path` ("/v3/kv/range") and returns etcd's answer.
  // `read_only`: the call changes nothing, so any failure may be retried on
  // another member. `*unknown` (when given) is set when a failed write may
  // have applied (it timed out, or its member went away with it).
  Result<EtcdJson> Call(std::string_view path, const EtcdJson& body, bool read_only = false,
                        bool* unknown = nullptr);

  // A stream's handle: Cancel ends its Stream call from another thread.
  class StreamHandle {
   public:
    void Cancel();

   private:
    friend class EtcdClient;
    std::mutex mu_;
    bool cancelled_ = false;
    httplib::Client* http_ = nullptr;  // while connected
  };
  // POSTs `body` to `path` and hands each JSON line of the answer to
  // `receive` until it returns false, the stream ends or `handle` is
  // cancelled; tries each endpoint once to connect. `idle_timeout_seconds`
  // bounds the wait for the next line. Returns why the stream ended (Ok when
  // `receive` stopped it).
  Status Stream(std::string_view path, const EtcdJson& body, int idle_timeout_seconds,
                StreamHandle& handle, const std::function<bool(const EtcdJson&)>& receive);

  const EtcdClientOptions& options() const { return options_; }

 private:
  // An idle connection to `endpoint` (*reused) or a new one.
  std::unique_ptr<httplib::Client> Take(size_t endpoint, bool* reused);
  void Give(size_t endpoint, std::unique_ptr<httplib::Client> client);

  EtcdClientOptions options_;
  std::atomic<size_t> preferred_{0};  // the endpoint that answered last
  std::mutex pool_mu_;
  std::vector<std::vector<std::unique_ptr<httplib::Client>>> idle_;  // per endpoint
};

}  // namespace berth::store
