#include "http/upstream.h"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace net = boost::asio;
using net::awaitable;
using net::ip::tcp;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// The pool's idle lifetimes run on this clock, moved by hand.
Clock::time_point fake_now;
Clock::time_point fake_clock() {
  return fake_now;
}

// An HTTP/1.1 upstream on 127.0.0.1, port 0, on the test's io_context: it
// answers every request with 200 and `body`, plus the extra header lines
// `headers(n)` gives for the n-th request on a connection (1-based), and
// counts connections. close_all() closes every connection without saying so
// first, as an engine does when its keep-alive timeout passes.
class FakeUpstream {
 public:
  explicit FakeUpstream(net::io_context& io)
      : acceptor_(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    net::co_spawn(io, accept_loop(), net::detached);
  }

  Url url() const { return Url{"127.0.0.1", acceptor_.local_endpoint().port(), ""}; }
  void close_all() {
    for (auto& s : sockets_) {
      boost::system::error_code ec;
      s->close(ec);
    }
    sockets_.clear();
  }
  // Stops listening: connects are refused from now on.
  void stop_listening() {
    boost::system::error_code ec;
    acceptor_.close(ec);
  }

  std::function<std::string(int)> headers = [](int) { return std::string(); };
  std::string body = "ok";
  // When set, the reply instead: these bytes, one write each; then the
  // connection is closed if close_after_raw, right after the last write.
  std::vector<std::string> raw;
  bool close_after_raw = false;
  // A pause between two raw parts, as an engine's between two tokens.
  std::chrono::milliseconds gap{0};
  int connections = 0;
  int requests = 0;

 private:
  awaitable<void> accept_loop() {
    for (;;) {
      auto socket = std::make_shared<tcp::socket>(acceptor_.get_executor());
      auto [ec] = co_await acceptor_.async_accept(*socket, use_tuple);
      if (ec) co_return;
      ++connections;
      sockets_.push_back(socket);
      net::co_spawn(acceptor_.get_executor(), session(socket), net::detached);
    }
  }

  awaitable<void> session(std::shared_ptr<tcp::socket> socket) {
    std::string in;
    for (int n = 1;; ++n) {
      auto [ec, head_size] =
          co_await net::async_read_until(*socket, net::dynamic_buffer(in), "\r\n\r\n", use_tuple);
      if (ec) co_return;
      std::size_t length = 0;
      if (auto at = in.find("Content-Length: "); at != std::string::npos && at < head_size)
        length = std::stoul(in.substr(at + 16));
      if (in.size() < head_size + length) {
        auto [bec, got] = co_await net::async_read(
            *socket, net::dynamic_buffer(in), net::transfer_exactly(head_size + length - in.size()),
            use_tuple);
        if (bec) co_return;
      }
      in.erase(0, head_size + length);
      ++requests;
      if (!raw.empty()) {
        for (const auto& part : raw) {
          if (gap > 0ms && &part != &raw.front()) {
            net::steady_timer pause(socket->get_executor(), gap);
            co_await pause.async_wait(use_tuple);
          }
          // The last part and the close go out together, as from an engine
          // that exits after writing: one edge for both at the reader.
          if (close_after_raw && &part == &raw.back()) {
            boost::system::error_code wec;
            net::write(*socket, net::buffer(part), wec);
            socket->close();
            co_return;
          }
          auto [wec, written] = co_await net::async_write(*socket, net::buffer(part), use_tuple);
          if (wec) co_return;
        }
        continue;
      }
      const std::string reply = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n" + headers(n) + "\r\n" + body;
      auto [wec, written] = co_await net::async_write(*socket, net::buffer(reply), use_tuple);
      if (wec) co_return;
    }
  }

  tcp::acceptor acceptor_;
  std::vector<std::shared_ptr<tcp::socket>> sockets_;
};

struct Outcome {
  bool ok = false;
  int status = 0;
  std::string body;
  std::string error;
  UpstreamFailure failure = UpstreamFailure::none;
};

awaitable<Outcome> exchange_on(UpstreamCall& call, std::shared_ptr<BufferBudget> budget) {
  Outcome out;
  UpstreamRequest request;
  request.target = "/v1/completions";
  request.body = R"({"prompt":"hi"})";
  auto head = co_await call.send(request);
  if (head) {
    out.status = head->status;
    auto body = co_await call.read_all(std::size_t(1) << 20, budget);
    if (body) {
      out.ok = true;
      out.body = std::move(*body);
    } else {
      out.error = body.error().message;
    }
  } else {
    out.error = head.error().message;
  }
  out.failure = call.failure();
  co_return out;
}

awaitable<Outcome> exchange(UpstreamPool& pool) {
  UpstreamCall call(pool);
  co_return co_await exchange_on(call, nullptr);
}

class UpstreamTest : public ::testing::Test {
 protected:
  UpstreamTest() {
    fake_now = Clock::now();
    options.now = &fake_clock;
  }

  UpstreamPool& pool() {
    if (!pool_) pool_.emplace(io.get_executor(), upstream.url(), options);
    return *pool_;
  }

  // Runs the loop until `done()` (bounded: a hang fails).
  template <class Done>
  void run_until_done(Done done) {
    const auto give_up = Clock::now() + 10s;
    while (!done() && Clock::now() < give_up) {
      io.run_for(5ms);
      io.restart();
    }
    ASSERT_TRUE(done()) << "a call never completed";
  }
  // Runs the loop until every one of `outcomes` is in.
  void run_until(const std::vector<std::optional<Outcome>*>& outcomes) {
    run_until_done([&] {
      for (auto* o : outcomes)
        if (!*o) return false;
      return true;
    });
  }

  // `count` exchanges started together, so that each takes a connection.
  std::vector<Outcome> together(int count) {
    std::vector<std::optional<Outcome>> results(count);
    std::vector<std::optional<Outcome>*> pending;
    for (auto& r : results) {
      pending.push_back(&r);
      net::co_spawn(
          io, [this, &r]() -> awaitable<void> { r = co_await exchange(pool()); }, net::detached);
    }
    run_until(pending);
    std::vector<Outcome> out;
    for (auto& r : results) out.push_back(r.value_or(Outcome{}));
    return out;
  }
  Outcome one() { return together(1).at(0); }

  net::io_context io;
  FakeUpstream upstream{io};
  UpstreamOptions options;
  std::optional<UpstreamPool> pool_;
};

TEST(KeepAliveHintTest, ParsesTimeoutAndMax) {
  auto hint = parse_keep_alive("timeout=5, max=100");
  EXPECT_EQ(hint.timeout, 5s);
  EXPECT_EQ(hint.max, 100u);
  hint = parse_keep_alive(" Timeout = \"7\" ,foo=bar,MAX=1");
  EXPECT_EQ(hint.timeout, 7s);
  EXPECT_EQ(hint.max, 1u);
}

TEST(KeepAliveHintTest, IgnoresWhatItCannotRead) {
  auto hint = parse_keep_alive("timeout=soon, max=-1, max");
  EXPECT_FALSE(hint.timeout);
  EXPECT_FALSE(hint.max);
  hint = parse_keep_alive("");
  EXPECT_FALSE(hint.timeout);
  EXPECT_FALSE(hint.max);
}

TEST_F(UpstreamTest, ReusesAConnectionWithinTheAnnouncedTimeoutLessAMargin) {
  upstream.headers = [](int) { return std::string("Keep-Alive: timeout=5, max=100\r\n"); };
  ASSERT_TRUE(one().ok);
  fake_now += 3900ms;
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 1) << "reused before the timeout's margin";
  fake_now += 4s;  // 5 s less a second's margin: the engine may close it any moment now
  EXPECT_EQ(pool().idle_count(), 1u);
  const Outcome third = one();
  ASSERT_TRUE(third.ok) << third.error;
  EXPECT_EQ(upstream.connections, 2) << "a connection about to expire was handed out";
  EXPECT_EQ(pool().idle_count(), 1u) << "the expired connection is closed, not kept";
}

TEST_F(UpstreamTest, AShortTimeoutKeepsHalfOfItAsTheMargin) {
  upstream.headers = [](int) { return std::string("Keep-Alive: timeout=1\r\n"); };
  ASSERT_TRUE(one().ok);
  fake_now += 400ms;
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 1);
  fake_now += 500ms;
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 2);
}

TEST_F(UpstreamTest, WithoutTheHeaderTheDefaultIdleLifetimeApplies) {
  EXPECT_EQ(options.idle_lifetime, 4s);
  ASSERT_TRUE(one().ok);
  fake_now += 3900ms;
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 1);
  fake_now += 4s;
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 2);
}

TEST_F(UpstreamTest, AConnectionWhoseMaxIsUsedUpIsNotPooled) {
  // As cpp-httplib counts: max=2 on the first response, max=1 on the last.
  upstream.headers = [](int n) {
    return "Keep-Alive: timeout=5, max=" + std::to_string(3 - n) + "\r\n";
  };
  ASSERT_TRUE(one().ok);
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 1);
  EXPECT_EQ(pool().idle_count(), 0u) << "max=1: the upstream takes no further request on it";
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 2);
}

TEST_F(UpstreamTest, ConnectionCloseIsNotPooled) {
  upstream.headers = [](int) { return std::string("Connection: close\r\n"); };
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(pool().idle_count(), 0u);
  ASSERT_TRUE(one().ok);
  EXPECT_EQ(upstream.connections, 2);
}

// The reproduction of issue 11 §1: a burst leaves several idle connections,
// the engine closes them all while idle, and the next request must not try
// one stale connection after another.
TEST_F(UpstreamTest, AStaleConnectionIsRetriedOnANewOneAndThatIsNoFailure) {
  for (const Outcome& o : together(4)) ASSERT_TRUE(o.ok) << o.error;
  ASSERT_EQ(upstream.connections, 4);
  ASSERT_EQ(pool().idle_count(), 4u);
  upstream.close_all();
  const Outcome next = one();
  ASSERT_TRUE(next.ok) << next.error;
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(next.body, "ok");
  EXPECT_EQ(next.failure, UpstreamFailure::none);
  EXPECT_EQ(upstream.connections, 5) << "one new connection, opened once";
  EXPECT_EQ(pool().idle_count(), 1u) << "the idle ones as old as the stale one are closed";
}

TEST_F(UpstreamTest, AFailureOnTheNewConnectionIsReported) {
  ASSERT_TRUE(one().ok);
  upstream.close_all();
  upstream.stop_listening();
  const Outcome next = one();
  EXPECT_FALSE(next.ok);
  EXPECT_EQ(next.failure, UpstreamFailure::connect);
  EXPECT_NE(next.error.find("cannot connect"), std::string::npos) << next.error;
}

// The body is decoded from the read buffer in place however it arrives.
TEST_F(UpstreamTest, AChunkedBodyInPiecesIsReadWhole) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                  "lo\r\n6;x=y\r\n world\r\n0\r\n", "Trailer: 1\r\n\r\n"};
  const Outcome got = one();
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_EQ(got.body, "hello world");
  EXPECT_EQ(pool().idle_count(), 1u) << "read to its end: pooled";
}

TEST_F(UpstreamTest, AMalformedChunkIsAProtocolFailureThatSaysWhy) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n"};
  const Outcome got = one();
  EXPECT_FALSE(got.ok);
  EXPECT_EQ(got.failure, UpstreamFailure::protocol);
  EXPECT_NE(got.error.find("a chunk size is not a hexadecimal number"), std::string::npos)
      << got.error;
  EXPECT_EQ(pool().idle_count(), 0u);
}

// The read buffer starts at one 4 KiB block: a longer head takes several
// reads, each parsed as far as it goes, and the body that came with its end
// is left for the body's decoder.
TEST_F(UpstreamTest, AResponseHeadLongerThanOneReadIsReadWhole) {
  const std::string head =
      "HTTP/1.1 200 OK\r\nX-Long: " + std::string(6000, 'a') + "\r\nContent-Length: 5\r\n\r\n";
  upstream.raw = {head.substr(0, 100), head.substr(100) + "he", "llo"};
  const Outcome got = one();
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, "hello");
  EXPECT_EQ(pool().idle_count(), 1u) << "read to its end: pooled";
}

TEST_F(UpstreamTest, AResponseHeadCutOffOrOverTheLimitIsAFailureThatSaysWhich) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nContent-Le"};
  upstream.close_after_raw = true;
  Outcome got = one();
  EXPECT_FALSE(got.ok);
  EXPECT_EQ(got.failure, UpstreamFailure::reset);
  EXPECT_NE(got.error.find("partial message"), std::string::npos) << got.error;
  // Beast's limit for a response head, 8 KiB, holds across reads.
  upstream.raw = {"HTTP/1.1 200 OK\r\nX-Long: " + std::string(5000, 'a'),
                  std::string(5000, 'a') + "\r\nContent-Length: 2\r\n\r\nok"};
  upstream.close_after_raw = false;
  got = one();
  EXPECT_FALSE(got.ok);
  EXPECT_EQ(got.failure, UpstreamFailure::protocol);
  EXPECT_NE(got.error.find("header limit"), std::string::npos) << got.error;
  EXPECT_EQ(pool().idle_count(), 0u);
}

TEST_F(UpstreamTest, BytesAfterTheResponseKeepItsConnectionOutOfThePool) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"};
  const Outcome got = one();
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_EQ(got.body, "ok");
  EXPECT_EQ(pool().idle_count(), 0u) << "the extra bytes would be read as the next response";
}

TEST_F(UpstreamTest, ABodyWithoutALengthEndsWhenTheUpstreamCloses) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall ", "of it"};
  upstream.close_after_raw = true;
  Outcome got = one();
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_EQ(got.body, "all of it");
  // With a length, the close cuts the body off.
  upstream.raw = {"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\ncut"};
  got = one();
  EXPECT_FALSE(got.ok);
  EXPECT_EQ(got.failure, UpstreamFailure::reset);
}

// The read buffer (4 KiB, given back between reads) grows to what a read
// brings: a body many times its size, in pieces, is read whole.
TEST_F(UpstreamTest, ABodyMuchLargerThanTheReadBufferIsReadWhole) {
  std::string body;
  for (int i = 0; body.size() < 200'000; ++i) body += std::to_string(i) + ",";
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  upstream.raw = {head + body.substr(0, 10), body.substr(10, 100'000), body.substr(100'010)};
  const Outcome got = one();
  ASSERT_TRUE(got.ok) << got.error;
  EXPECT_EQ(got.body, body);
  EXPECT_EQ(pool().idle_count(), 1u);
}

// An upstream that closes mid-body right after its last bytes: the close
// comes with them, one edge for both, and the read after them finds it.
TEST_F(UpstreamTest, AnUpstreamClosingWithItsLastBytesMidBodyIsSeenToClose) {
  options.idle_timeout = 60s;
  options.close_check_after = 50ms;
  upstream.raw = {"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nfirst ", "second "};
  upstream.close_after_raw = true;
  upstream.gap = 50ms;
  const Outcome got = one();
  EXPECT_FALSE(got.ok);
  EXPECT_EQ(got.failure, UpstreamFailure::reset) << got.error;
  EXPECT_NE(got.error.find("partial message"), std::string::npos) << got.error;
}

// A call whose upstream falls silent mid-body waits without a read buffer,
// under the same deadline: idle_timeout ends it.
TEST_F(UpstreamTest, AnUpstreamSilentMidBodyTimesOut) {
  options.idle_timeout = 100ms;
  upstream.raw = {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"};
  const auto started = Clock::now();
  const Outcome got = one();
  EXPECT_FALSE(got.ok);
  EXPECT_EQ(got.failure, UpstreamFailure::timeout);
  EXPECT_NE(got.error.find("no data within the idle timeout"), std::string::npos) << got.error;
  EXPECT_GE(Clock::now() - started, 100ms);
  EXPECT_EQ(pool().idle_count(), 0u);
}

// Takes every read's pieces, and stops the call after its `stop_at`-th read.
struct CollectingSink final : PieceSink {
  bool take(BodyPieces pieces, std::chrono::steady_clock::time_point) override {
    ++reads;
    for (auto piece : pieces) taken += piece;
    return reads != stop_at;
  }
  std::string taken;
  int reads = 0;
  int stop_at = 0;
};

// What read_some(sink) completed with, in order: the pieces, "<end>" or the error.
awaitable<std::vector<std::string>> read_into(UpstreamCall& call, PieceSink& sink) {
  std::vector<std::string> completions;
  UpstreamRequest request;
  request.target = "/v1/completions";
  auto head = co_await call.send(request);
  if (!head) co_return std::vector<std::string>{head.error().message};
  for (;;) {
    auto got = co_await call.read_some(sink);
    if (!got) {
      completions.push_back(got.error().message);
      co_return completions;
    }
    if (got->empty()) break;
    std::string pieces;
    for (auto piece : *got) pieces += piece;
    completions.push_back(pieces);
  }
  completions.push_back("<end>");
  co_return completions;
}

class UpstreamSinkTest : public UpstreamTest {
 protected:
  std::vector<std::string> read_with(PieceSink& sink) {
    std::optional<std::vector<std::string>> got;
    net::co_spawn(
        io,
        [&]() -> awaitable<void> {
          UpstreamCall call(pool());
          got = co_await read_into(call, sink);
        },
        net::detached);
    run_until_done([&] { return got.has_value(); });
    return got.value_or(std::vector<std::string>{"never completed"});
  }
};

// A stream's reads go to the sink where they complete: its caller is
// resumed once, at the body's end.
TEST_F(UpstreamSinkTest, ASinkTakesEveryReadAndTheCallCompletesAtTheBodysEnd) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                  "6\r\n world\r\n", "1\r\n!\r\n0\r\n\r\n"};
  upstream.gap = 20ms;
  CollectingSink sink;
  EXPECT_EQ(read_with(sink), std::vector<std::string>{"<end>"});
  EXPECT_EQ(sink.taken, "hello world!");
  EXPECT_GE(sink.reads, 2);
  EXPECT_EQ(pool().idle_count(), 1u) << "read to its end: pooled";
}

// A sink that stops the call gets its caller back with the pieces it took;
// the next read_some(sink) goes on from there.
TEST_F(UpstreamSinkTest, ASinkThatStopsResumesItsCallerWithThePiecesItTook) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello", " world"};
  upstream.gap = 20ms;
  CollectingSink sink;
  sink.stop_at = 1;
  EXPECT_EQ(read_with(sink), (std::vector<std::string>{"hello", "<end>"}));
  EXPECT_EQ(sink.taken, "hello world");
}

// A failure is the caller's to see, not the sink's: it completes the call.
TEST_F(UpstreamSinkTest, AFailureMidBodyCompletesTheCallPastTheSink) {
  upstream.raw = {"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\ncut"};
  upstream.close_after_raw = true;
  CollectingSink sink;
  const auto got = read_with(sink);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("partial message"), std::string::npos) << got[0];
  EXPECT_EQ(sink.taken, "cut");
  EXPECT_EQ(pool().idle_count(), 0u);
}

TEST(BufferBudgetTest, TakesOnlyWhatFits) {
  BufferBudget budget(100);
  EXPECT_EQ(budget.total(), 100u);
  EXPECT_TRUE(budget.try_take(60));
  EXPECT_FALSE(budget.try_take(41));
  EXPECT_EQ(budget.used(), 60u);
  EXPECT_TRUE(budget.try_take(40));
  budget.give_back(100);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(BufferBudget().total(), std::size_t(512) << 20);
}

TEST_F(UpstreamTest, BufferedBodiesShareTheBudgetUntilTheirCallsEnd) {
  upstream.body.assign(60 * 1024, 'x');
  auto budget = std::make_shared<BufferBudget>(100 * 1024);
  std::optional<Outcome> first, second;
  std::optional<std::size_t> used_while_held;
  net::co_spawn(
      io,
      [&]() -> awaitable<void> {
        UpstreamCall holder(pool());  // its body is still held by the caller
        first = co_await exchange_on(holder, budget);
        UpstreamCall other(pool());
        second = co_await exchange_on(other, budget);
        used_while_held = budget->used();
      },
      net::detached);
  ASSERT_NO_FATAL_FAILURE(run_until({&first, &second}));
  ASSERT_TRUE(used_while_held);
  ASSERT_TRUE(first->ok) << first->error;
  EXPECT_EQ(first->body.size(), 60u * 1024);
  EXPECT_FALSE(second->ok);
  EXPECT_EQ(second->failure, UpstreamFailure::local);
  EXPECT_NE(second->error.find("buffer for responses"), std::string::npos) << second->error;
  EXPECT_EQ(*used_while_held, 60u * 1024) << "the failed read gave its part back";
  EXPECT_EQ(budget->used(), 0u) << "ended calls give everything back";

  std::optional<Outcome> third;
  net::co_spawn(
      io,
      [&]() -> awaitable<void> {
        UpstreamCall call(pool());
        third = co_await exchange_on(call, budget);
      },
      net::detached);
  ASSERT_NO_FATAL_FAILURE(run_until({&third}));
  EXPECT_TRUE(third->ok) << third->error;
}

// Lowers the soft limit on open files so that the next socket() fails with
// EMFILE; restores it when it goes.
class NoFreeDescriptors {
 public:
  NoFreeDescriptors() {
    getrlimit(RLIMIT_NOFILE, &saved_);
    const int lowest_free = ::open("/dev/null", O_RDONLY);
    ::close(lowest_free);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free);
    setrlimit(RLIMIT_NOFILE, &lowered);
  }
  ~NoFreeDescriptors() { setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

TEST_F(UpstreamTest, RunningOutOfDescriptorsIsALocalFailure) {
  // The same failing path once with descriptors to spare: the sanitizers
  // check a type the first time they meet it, using a pipe, and would report
  // nonsense with none left.
  UpstreamPool& p = pool();
  upstream.stop_listening();
  ASSERT_EQ(one().failure, UpstreamFailure::connect);
  std::optional<Outcome> result;
  {
    // No test macros in here: they too would meet new types.
    NoFreeDescriptors no_fds;
    net::co_spawn(
        io, [&]() -> awaitable<void> { result = co_await exchange(p); }, net::detached);
    const auto give_up = Clock::now() + 10s;
    while (!result && Clock::now() < give_up) {
      io.run_for(5ms);
      io.restart();
    }
  }
  ASSERT_TRUE(result) << "the call never completed";
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(result->failure, UpstreamFailure::local) << result->error;
  EXPECT_EQ(upstream.connections, 0);
}

// Issue 11 §5: at shutdown the io_context destroys suspended coroutine frames
// after the pool's owner is gone; the call in such a frame must not touch the
// freed pool (ASan reports a use after free if it does).
TEST(UpstreamShutdownTest, ACallMayOutliveItsPool) {
  auto io = std::make_unique<net::io_context>();
  {
    // Takes the connection and the request, and never answers.
    tcp::acceptor silent(*io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    silent.non_blocking(true);
    tcp::socket peer(*io);
    auto pool = std::make_unique<UpstreamPool>(io->get_executor(),
                                               Url{"127.0.0.1", silent.local_endpoint().port(), ""},
                                               UpstreamOptions{});
    net::co_spawn(
        *io,
        [&pool]() -> awaitable<void> {
          UpstreamCall call(*pool);
          co_await exchange_on(call, std::make_shared<BufferBudget>());
        },
        net::detached);
    // Until the request has arrived: the call now waits for the headers.
    const auto give_up = Clock::now() + 10s;
    boost::system::error_code ec;
    while (Clock::now() < give_up) {
      io->run_for(5ms);
      io->restart();
      if (!peer.is_open()) silent.accept(peer, ec);
      if (peer.is_open() && peer.available(ec) > 0) break;
    }
    ASSERT_TRUE(peer.is_open() && peer.available(ec) > 0) << "the request never arrived";
    pool.reset();
  }
  io.reset();  // destroys the suspended call's frame
}

}  // namespace
}  // namespace switchyard::http
