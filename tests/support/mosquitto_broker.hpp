#pragma once
// Test and benchmark helper: a mosquitto broker of its own, started on a free
// loopback port and killed when the object goes.
//
//   sinew_support::mosquitto_broker b;                    // /usr/sbin/mosquitto, or $SINEW_MOSQUITTO
//   if (!b.why.empty()) skip(b.why);                      // no broker installed, or it did not start
//   sinew::io::mqtt_source_options in;
//   in.broker.port = b.port;
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace sinew_support {

/// A loopback TCP port nobody listens on (at the time of the call).
inline int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

/// True when something accepts connections on the loopback `port`.
inline bool accepts(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

/// A mosquitto broker on a loopback port (empty `why` when it runs).
/// `config`: lines added to its configuration file (e.g.
/// "max_queued_messages 0" so that QoS 0 messages to a slow subscriber wait
/// instead of being dropped).
struct mosquitto_broker {
  int port = free_port();
  pid_t pid = -1;
  std::string why;
  std::string conf;

  explicit mosquitto_broker(const std::string& config = "") {
    conf = "/tmp/sinew-mosquitto-" + std::to_string(::getpid()) + "-" + std::to_string(port) + ".conf";
    std::ofstream(conf) << "listener " << port << " 127.0.0.1\nallow_anonymous true\n" << config << "\n";
    start();
  }
  ~mosquitto_broker() {
    kill_now();
    std::remove(conf.c_str());
  }
  mosquitto_broker(const mosquitto_broker&) = delete;
  mosquitto_broker& operator=(const mosquitto_broker&) = delete;

  void start() {
    const char* env = std::getenv("SINEW_MOSQUITTO");
    const std::string exe = env && *env ? env : "/usr/sbin/mosquitto";
    if (::access(exe.c_str(), X_OK) != 0) {
      why = "no mosquitto broker at " + exe + " (Debian: apt-get install mosquitto)";
      return;
    }
    pid = ::fork();
    if (pid == 0) {
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      ::execl(exe.c_str(), exe.c_str(), "-c", conf.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {  // up to 5 s
      if (accepts(port)) {
        why.clear();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    why = "mosquitto did not start";
  }
  void kill_now() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
};

}  // namespace sinew_support
