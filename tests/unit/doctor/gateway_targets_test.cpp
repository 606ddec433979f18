// doctor looking behind a Switchyard gateway: --url GATEWAY and -c fleet.yaml with supervised
// instances, through a fake fetch standing in for the gateway and its engines.
#include "doctor/gateway_targets.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../support.h"
#include "doctor/doctor.h"
#include "fake_fetch.h"
#include "sysfs_fixture.h"

namespace switchyard::doctor {
namespace {

using namespace switchyard::testing_support;

using namespace std::chrono_literals;

const char* const kQuietLlama =
    "llamacpp:tokens_predicted_total 5\nllamacpp:predicted_tokens_seconds 50\n"
    "llamacpp:requests_processing 0\n";

// The gateway's /health with detail, as gateway/info_routes.cpp writes it.
std::string health_detail(const std::string& name, const std::string& url) {
  return R"({"status":"ok","instances":[{"name":")" + name +
         R"(","model":"m","state":"ready","admin":"active","url":")" + url +
         R"(","gpus":"0","slots":2,"in_flight":0}],"models":[{"name":"m","queued":0}]})";
}

struct Report {
  int exit_code;
  std::string out;
};

Report run(DoctorOptions options, const Fetcher& fetch) {
  options.run_nvidia_smi = false;
  options.interval = 0ms;
  std::ostringstream out, err;
  const int code = run_doctor(options, fetch, out, err);
  EXPECT_TRUE(err.str().empty()) << err.str();
  return {code, out.str()};
}

TEST(DoctorGateway, UrlOfAGatewayChecksTheInstancesBehindIt) {
  fixture::SysfsTree tree;
  fixture::FakeFetch fake;
  fake.answer("http://127.0.0.1:8080/health", 200, health_detail("gpu0", "http://127.0.0.1:9001"));
  fake.answer("http://127.0.0.1:9001/metrics", 200, kQuietLlama);
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.urls = {"http://127.0.0.1:8080/"};
  const Report r = run(options, fake.fetcher());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "http://127.0.0.1:9001  llama.cpp")) << r.out;
  // The note wraps after "(ready,"; its start is on one line.
  EXPECT_TRUE(contains(
      r.out, "http://127.0.0.1:8080 is a Switchyard gateway with 1 instance: gpu0 (ready,"))
      << r.out;
  // The gateway itself is not scraped as an engine ("not an engine doctor knows").
  for (const auto& url : fake.requests()) EXPECT_NE(url, "http://127.0.0.1:8080/metrics");
}

// A gateway with api_keys shows only {"status"} without a key; it says Server: switchyard.
Fetcher keyed_gateway(std::vector<std::string>* seen_auth) {
  return [seen_auth](const http::FetchRequest& request) -> Result<http::FetchResponse> {
    std::string auth;
    for (const auto& [name, value] : request.headers) {
      if (name == "Authorization") auth = value;
    }
    if (request.url == "http://127.0.0.1:8080/health") {
      seen_auth->push_back(auth);
      const bool allowed = auth == "Bearer k1";
      return http::FetchResponse{
          200,
          {{"Server", "switchyard"}},
          allowed ? health_detail("gpu0", "http://127.0.0.1:9001") : R"({"status":"ok"})"};
    }
    if (request.url == "http://127.0.0.1:9001/metrics") {
      EXPECT_TRUE(auth.empty()) << "the gateway's key must not go to the engines";
      return http::FetchResponse{200, {}, kQuietLlama};
    }
    return http::FetchResponse{404, {}, "not found"};
  };
}

TEST(DoctorGateway, AKeyedGatewayNeedsTheKey) {
  fixture::SysfsTree tree;
  std::vector<std::string> auth;
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.urls = {"http://127.0.0.1:8080"};
  Report r = run(options, keyed_gateway(&auth));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "pass --key KEY")) << r.out;

  options.key = "wrong";
  r = run(options, keyed_gateway(&auth));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "the key is not one of its api_keys")) << r.out;

  options.key = "k1";
  r = run(options, keyed_gateway(&auth));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "http://127.0.0.1:9001  llama.cpp")) << r.out;
  EXPECT_EQ(auth.back(), "Bearer k1");
}

TEST(DoctorGateway, FleetConfigReachesSupervisedInstancesThroughItsListen) {
  fixture::SysfsTree tree;
  const std::string path = (tree.root() / "fleet.yaml").string();
  std::ofstream(path) << "listen: 0.0.0.0:8099\n"
                         "instances:\n"
                         "  - name: card0\n    command: llama-server --port ${PORT}\n"
                         "  - name: card1\n    command: llama-server --port ${PORT}\n";
  fixture::FakeFetch fake;
  fake.answer("http://127.0.0.1:8099/health", 200, health_detail("card0", "http://127.0.0.1:9001"));
  fake.answer("http://127.0.0.1:9001/metrics", 200, kQuietLlama);
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.fleet_config = path;
  const Report r = run(options, fake.fetcher());
  EXPECT_TRUE(contains(r.out, "http://127.0.0.1:9001  llama.cpp")) << r.out;
  EXPECT_FALSE(contains(r.out, "Instance card0 is supervised")) << r.out;
  // card1 is not in the gateway's list: named, with why.
  EXPECT_TRUE(contains(r.out, "Instance card1 is supervised")) << r.out;
  EXPECT_TRUE(contains(r.out, "does not list it")) << r.out;
}

TEST(DoctorGateway, FleetConfigWithoutARunningGatewaySaysSo) {
  fixture::SysfsTree tree;
  const std::string path = (tree.root() / "fleet.yaml").string();
  std::ofstream(path) << "listen: 127.0.0.1:8099\n"
                         "instances:\n  - name: card0\n    command: llama-server --port ${PORT}\n";
  fixture::FakeFetch fake;
  fake.refuse("http://127.0.0.1:8099");
  DoctorOptions options;
  options.sysfs_root = tree.root();
  options.fleet_config = path;
  const Report r = run(options, fake.fetcher());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "No gateway answered at http://127.0.0.1:8099")) << r.out;
  EXPECT_TRUE(contains(r.out, "start it with switchyard serve -c")) << r.out;
}

TEST(DoctorGateway, ListenUrl) {
  EXPECT_EQ(listen_url("0.0.0.0:8080"), "http://127.0.0.1:8080");
  EXPECT_EQ(listen_url("127.0.0.1:9"), "http://127.0.0.1:9");
  EXPECT_EQ(listen_url("[::]:8080"), "http://127.0.0.1:8080");
  EXPECT_EQ(listen_url("[::1]:8080"), "http://[::1]:8080");
  EXPECT_EQ(listen_url("box.lan:8080"), "http://box.lan:8080");
}

}  // namespace
}  // namespace switchyard::doctor
