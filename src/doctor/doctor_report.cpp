#include "doctor/doctor_report.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <map>
#include <sstream>

#include "doctor/gpu_matrix.h"
#include "doctor/pcie_link.h"

namespace switchyard::doctor {
namespace {

namespace json = boost::json;

constexpr std::size_t text_width = 100;

// Word-wraps `text` to text_width, the first line after `first`, the rest
// indented to match it.
void write_wrapped(std::ostream& out, const std::string& first, const std::string& text) {
  const std::string indent(first.size(), ' ');
  std::istringstream words(text);
  std::string word;
  std::string line = first;
  std::size_t line_chars = first.size();
  bool empty = true;
  while (words >> word) {
    // Count characters, not bytes, so "≈" and "→" do not wrap early.
    std::size_t chars = 0;
    for (unsigned char c : word) chars += (c & 0xc0) != 0x80;
    if (!empty && line_chars + 1 + chars > text_width) {
      out << line << '\n';
      line = indent;
      line_chars = indent.size();
      empty = true;
    }
    if (!empty) {
      line += ' ';
      ++line_chars;
    }
    line += word;
    line_chars += chars;
    empty = false;
  }
  out << line << '\n';
}

std::string hex4(unsigned v) {
  return fmt::format("{:04x}", v);
}

std::string hop_text(const PathHop& hop, Attachment attachment) {
  switch (hop.role) {
    case HopRole::root_port:
      return fmt::format("{} root port {}", attachment == Attachment::chipset ? "chipset" : "CPU",
                         hop.function.address);
    case HopRole::platform_bridge:
      return fmt::format("bridge {} [{}:{}]", hop.function.address, hex4(hop.function.vendor_id),
                         hex4(hop.function.device_id));
    case HopRole::card_bridge:
      return "card switch " + hop.function.address;
    case HopRole::gpu:
      return "GPU";
  }
  return hop.function.address;
}

std::string atomics_text(const ScannedGpu& gpu) {
  const AtomicsCheck& a = gpu.path.atomics;
  std::string text;
  switch (a.state) {
    case AtomicsState::ok:
      text = fmt::format(
          "ok: the root port completes 32/64-bit AtomicOps ({}), every switch "
          "port routes them",
          a.root_port_bits);
      break;
    case AtomicsState::missing: {
      text = "missing: ";
      for (std::size_t i = 0; i < a.failures.size(); ++i) text += (i ? "; " : "") + a.failures[i];
      break;
    }
    case AtomicsState::unchecked:
      text = "unchecked: config space beyond 64 bytes needs root";
      break;
    case AtomicsState::not_applicable:
      text = "not applicable";
      break;
  }
  if (gpu.path.gpu().vendor_id != 0x1002 && a.state != AtomicsState::not_applicable) {
    text += " (only ROCm needs them)";
  }
  return text;
}

std::string measurement_text(const Measurement& m) {
  static const std::map<std::string, std::string> labels{
      {"generation_tokens_per_s", "generation (tokens/wall)"},
      {"self_reported_tokens_per_s", "self-reported"},
      {"requests_running", "running"},
      {"requests_waiting", "waiting"},
      {"kv_cache_usage", "KV in use"},
      {"preemptions_total", "preemptions"},
      {"prefix_cache_hit_rate", "prefix cache hits"},
      {"spec_decode_acceptance", "draft acceptance"},
      {"kv_pool_tokens", "KV pool"},
      {"max_model_len", "max model len"},
      {"ttft_mean_s", "TTFT mean"},
      {"ttft_p90_s", "TTFT p90"},
      {"queue_time_mean_s", "queue mean"},
      {"queue_time_p90_s", "queue p90"},
      {"slots", "slots"},
      {"slot_context_tokens", "n_ctx per slot"},
      {"slots_busy", "slots busy"},
  };
  auto it = labels.find(m.name);
  const std::string label = it == labels.end() ? m.name : it->second;
  if (m.unit == "tok/s") return fmt::format("{} {:.1f} tok/s", label, m.value);
  if (m.unit == "ratio") return fmt::format("{} {:.0f}%", label, m.value * 100);
  if (m.unit == "s") return fmt::format("{} {:.2f} s", label, m.value);
  if (m.unit == "tokens") return fmt::format("{} {:.0f} tokens", label, m.value);
  return fmt::format("{} {:.0f}", label, m.value);
}

void write_gpu(std::ostream& out, const ScannedGpu& gpu) {
  const GpuPath& path = gpu.path;
  const PciFunction& f = path.gpu();
  std::string title = fmt::format("  GPU {}  ", f.address);
  title += gpu.model ? std::string(gpu.model->name) : "unknown model";
  title += fmt::format(" [{}:{}]", hex4(f.vendor_id), hex4(f.device_id));
  if (!gpu.gfx.empty()) title += " " + gpu.gfx;
  out << title << '\n';

  std::string hops;
  for (const auto& hop : path.hops) {
    hops += (hops.empty() ? "" : " → ") + hop_text(hop, path.root.attachment);
  }
  write_wrapped(out, "    path      ", hops);
  write_wrapped(out, "    attached  ",
                fmt::format("{}: {}", to_string(path.root.attachment), path.root.reason));
  if (path.narrowest) {
    std::string link =
        fmt::format("{} at its narrowest ({})",
                    describe_link(path.narrowest->current.gts, path.narrowest->current.width),
                    path.narrowest->address);
    if (path.card_max) {
      link += fmt::format("; the card can do {}",
                          describe_link(path.card_max->gts, path.card_max->width));
    }
    write_wrapped(out, "    link      ", link);
  }
  if (path.root_port()) write_wrapped(out, "    atomics   ", atomics_text(gpu));
  if (gpu.sensors) write_wrapped(out, "    sensors   ", describe_sensors(*gpu.sensors));
}

std::string verdict_word(const PairVerdict& v) {
  return v.ok ? (*v.ok ? "yes" : "NO") : "?";
}

// The GPU x GPU table as nvidia-smi topo -m prints it, then each pair's verdicts.
void write_matrix(std::ostream& out, const GpuMatrix& m) {
  out << "\n  GPU x GPU (like nvidia-smi topo -m)\n";
  std::string head = "          ";
  for (std::size_t i = 0; i < m.gpus.size(); ++i)
    head += fmt::format("{:<6}", fmt::format("GPU{}", i));
  out << head << fmt::format("{:<14}{:<7}{}", "PCI address", "index", "render node") << "\n";
  for (std::size_t a = 0; a < m.gpus.size(); ++a) {
    std::string row = fmt::format("    {:<6}", fmt::format("GPU{}", a));
    for (std::size_t b = 0; b < m.gpus.size(); ++b)
      row += fmt::format("{:<6}", a == b ? "X" : to_string(m.pair(a, b)->path));
    const GpuIndex& g = m.gpus[a];
    const std::string index =
        g.index ? fmt::format("{} {}", g.runtime, *g.index) : std::string("-");
    row +=
        fmt::format("{:<14}{:<7}{}", g.address, index, g.render_node.empty() ? "-" : g.render_node);
    out << row << "\n";
  }
  write_wrapped(out, "    legend  ",
                "SW below one root port (same switch) · HB across root ports of one host bridge "
                "(PHB) · CS through the chipset · SYS across host bridges. index: the number for "
                "HIP_VISIBLE_DEVICES (AMD) or CUDA_VISIBLE_DEVICES (NVIDIA, with "
                "CUDA_DEVICE_ORDER=PCI_BUS_ID) in a fleet file's env.");
  for (const auto& p : m.pairs) {
    write_wrapped(out, fmt::format("    GPU{}-GPU{}  ", p.a, p.b),
                  fmt::format("{}; P2P {}: {}; AtomicOps {}: {}", describe(p.path),
                              verdict_word(p.peer_to_peer), p.peer_to_peer.why,
                              verdict_word(p.atomics), p.atomics.why));
  }
}

json::value opt(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}
json::value opt(const std::optional<int>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object finding_json(const Finding& f) {
  return {{"severity", to_string(f.severity)},
          {"check", f.check},
          {"subject", f.subject},
          {"message", f.message}};
}

json::object gpu_json(const ScannedGpu& gpu) {
  const GpuPath& path = gpu.path;
  const PciFunction& f = path.gpu();
  json::array hops;
  for (const auto& hop : path.hops) {
    json::object h{{"address", hop.function.address},
                   {"role", to_string(hop.role)},
                   {"vendor_id", hex4(hop.function.vendor_id)},
                   {"device_id", hex4(hop.function.device_id)},
                   {"link",
                    {{"current_gts", opt(hop.function.link.current_gts)},
                     {"current_width", opt(hop.function.link.current_width)},
                     {"max_gts", opt(hop.function.link.max_gts)},
                     {"max_width", opt(hop.function.link.max_width)}}}};
    const auto& config = hop.function.config;
    h["config_bytes"] = config ? json::value(config->readable_bytes) : json::value(nullptr);
    if (config && config->pcie_lookup == CapabilityLookup::found) {
      const PcieCapability& cap = config->pcie;
      h["atomic_ops"] = {{"routing", cap.atomic_routing()},
                         {"completer32", cap.atomic_completer32()},
                         {"completer64", cap.atomic_completer64()},
                         {"cas128", cap.atomic_cas128()},
                         {"egress_blocked", cap.atomic_egress_blocked()}};
    } else {
      h["atomic_ops"] = nullptr;
    }
    hops.push_back(std::move(h));
  }
  json::object g{
      {"address", f.address},
      {"vendor_id", hex4(f.vendor_id)},
      {"device_id", hex4(f.device_id)},
      {"model", gpu.model ? json::value(std::string(gpu.model->name)) : json::value(nullptr)},
      {"gfx", gpu.gfx.empty() ? json::value(nullptr) : json::value(gpu.gfx)},
      {"attachment", to_string(path.root.attachment)},
      {"attachment_reason", path.root.reason},
      {"root_port",
       path.root_port() ? json::value(path.root_port()->address) : json::value(nullptr)},
      {"path", std::move(hops)}};
  if (path.narrowest) {
    g["narrowest_link"] = {
        {"address", path.narrowest->address},
        {"gts", path.narrowest->current.gts},
        {"width", path.narrowest->current.width},
        {"gbytes_per_s", path.narrowest->current.gbytes_per_s()},
        {"port_max_gts", path.narrowest->port_max ? json::value(path.narrowest->port_max->gts)
                                                  : json::value(nullptr)},
        {"port_max_width", path.narrowest->port_max ? json::value(path.narrowest->port_max->width)
                                                    : json::value(nullptr)}};
  } else {
    g["narrowest_link"] = nullptr;
  }
  if (path.card_max) {
    g["card_max"] = {{"gts", path.card_max->gts},
                     {"width", path.card_max->width},
                     {"gbytes_per_s", path.card_max->gbytes_per_s()}};
  } else {
    g["card_max"] = nullptr;
  }
  json::array failures, unreadable;
  for (const auto& s : path.atomics.failures) failures.push_back(json::value(s));
  for (const auto& s : path.atomics.unreadable) unreadable.push_back(json::value(s));
  g["atomics"] = {{"state", to_string(path.atomics.state)},
                  {"failures", std::move(failures)},
                  {"unreadable", std::move(unreadable)},
                  {"root_port_bits", path.atomics.root_port_bits}};
  if (gpu.sensors) {
    json::object temps, clocks;
    for (const auto& [label, c] : gpu.sensors->temperatures_c) temps[label] = c;
    for (const auto& [label, mhz] : gpu.sensors->clocks_mhz) clocks[label] = mhz;
    g["sensors"] = {
        {"driver", gpu.sensors->driver},        {"temperatures_c", std::move(temps)},
        {"power_w", opt(gpu.sensors->power_w)}, {"power_cap_w", opt(gpu.sensors->power_cap_w)},
        {"clocks_mhz", std::move(clocks)},      {"fan_rpm", opt(gpu.sensors->fan_rpm)}};
  } else {
    g["sensors"] = nullptr;
  }
  return g;
}

}  // namespace

std::vector<Finding> DoctorReport::findings() const {
  std::vector<Finding> all = box_findings;
  all.insert(all.end(), fleet_notes.begin(), fleet_notes.end());
  for (const auto& backend : backends) {
    all.insert(all.end(), backend.findings.begin(), backend.findings.end());
  }
  return all;
}

int DoctorReport::exit_code() const {
  return count_findings(findings(), Severity::warning) > 0 ? 1 : 0;
}

void write_text(const DoctorReport& report, std::ostream& out) {
  out << "The box (" << report.box.root.string() << ")\n";
  if (report.box.gpus.empty()) out << "  no GPU on the PCI bus\n";
  for (const auto& gpu : report.box.gpus) write_gpu(out, gpu);
  if (!report.box.gpus.empty()) write_matrix(out, gpu_matrix(report.box));
  if (report.nvidia_smi_topology) {
    out << "  nvidia-smi topo -m:\n";
    std::istringstream lines(*report.nvidia_smi_topology);
    for (std::string line; std::getline(lines, line);) out << "    " << line << '\n';
  }

  if (!report.backends.empty() || !report.fleet_notes.empty()) {
    out << "\nBackends\n";
    if (report.backends.empty()) out << "  none with a URL to check\n";
  }
  for (const auto& backend : report.backends) {
    if (!backend.reachable) {
      out << "  " << backend.url << "  unreachable\n";
      continue;
    }
    out << fmt::format("  {}  {}, {:.1f} s window\n", backend.url, to_string(backend.engine),
                       backend.window_seconds);
    std::string line;
    for (const auto& m : backend.measurements) {
      line += (line.empty() ? "" : " · ") + measurement_text(m);
    }
    if (!line.empty()) write_wrapped(out, "    ", line);
  }

  const auto findings = report.findings();
  out << "\nVerdicts\n";
  if (findings.empty()) out << "  nothing wrong found\n";
  for (const auto& f : findings) {
    // With several backends, a note such as "No tokens were generated"
    // must say which one it is about.
    const bool names_it =
        !f.check.starts_with("backend.") || f.message.find(f.subject) != std::string::npos;
    write_wrapped(out, f.severity == Severity::warning ? "  WARNING  " : "  note     ",
                  names_it ? f.message : f.subject + ": " + f.message);
  }
  const long warnings = count_findings(findings, Severity::warning);
  const long notes = count_findings(findings, Severity::note);
  out << fmt::format("\n{} warning{}, {} note{}: exit {}\n", warnings, warnings == 1 ? "" : "s",
                     notes, notes == 1 ? "" : "s", report.exit_code());
}

json::object to_json(const DoctorReport& report) {
  json::array gpus;
  for (const auto& gpu : report.box.gpus) gpus.push_back(gpu_json(gpu));

  const GpuMatrix matrix = gpu_matrix(report.box);
  const auto verdict_json = [](const PairVerdict& v) {
    return json::object{{"ok", v.ok ? json::value(*v.ok) : json::value(nullptr)}, {"why", v.why}};
  };
  json::array indexes, pairs;
  for (const auto& g : matrix.gpus)
    indexes.push_back(
        json::object{{"address", g.address},
                     {"runtime", g.runtime.empty() ? json::value(nullptr) : json::value(g.runtime)},
                     {"index", opt(g.index)},
                     {"order", g.order},
                     {"render_node",
                      g.render_node.empty() ? json::value(nullptr) : json::value(g.render_node)}});
  for (const auto& p : matrix.pairs)
    pairs.push_back(json::object{{"a", p.a},
                                 {"b", p.b},
                                 {"path", to_string(p.path)},
                                 {"path_text", describe(p.path)},
                                 {"peer_to_peer", verdict_json(p.peer_to_peer)},
                                 {"atomics", verdict_json(p.atomics)}});

  json::value kfd = nullptr;
  if (report.box.kfd) {
    json::array nodes, links;
    for (const auto& n : report.box.kfd->nodes) {
      nodes.push_back(json::object{{"id", n.id},
                                   {"is_gpu", n.is_gpu},
                                   {"gfx", gfx_name(n.gfx_target_version)},
                                   {"pci_address", n.pci_address}});
    }
    for (const auto& l : report.box.kfd->links) {
      links.push_back(json::object{{"node_from", l.node_from},
                                   {"node_to", l.node_to},
                                   {"type", l.type},
                                   {"flags", l.flags},
                                   {"no_atomics", l.no_atomics()},
                                   {"no_peer_to_peer", l.no_peer_to_peer()}});
    }
    kfd = json::object{{"nodes", std::move(nodes)}, {"links", std::move(links)}};
  }

  json::array backends;
  for (const auto& b : report.backends) {
    json::object measurements;
    for (const auto& m : b.measurements)
      measurements[m.name] = {{"value", m.value}, {"unit", m.unit}};
    json::array findings;
    for (const auto& f : b.findings) findings.push_back(finding_json(f));
    backends.push_back(json::object{{"url", b.url},
                                    {"engine", to_string(b.engine)},
                                    {"reachable", b.reachable},
                                    {"window_seconds", b.window_seconds},
                                    {"measurements", std::move(measurements)},
                                    {"findings", std::move(findings)}});
  }

  json::array findings;
  const auto all = report.findings();
  for (const auto& f : all) findings.push_back(finding_json(f));

  return {
      {"sysfs_root", report.box.root.string()},
      {"pci_visible", report.box.pci_visible},
      {"gpus", std::move(gpus)},
      {"kfd", std::move(kfd)},
      {"gpu_matrix", {{"gpus", std::move(indexes)}, {"pairs", std::move(pairs)}}},
      {"nvidia_smi_topology", report.nvidia_smi_topology ? json::value(*report.nvidia_smi_topology)
                                                         : json::value(nullptr)},
      {"backends", std::move(backends)},
      {"findings", std::move(findings)},
      {"summary",
       {{"warnings", count_findings(all, Severity::warning)},
        {"notes", count_findings(all, Severity::note)}}},
      {"exit_code", report.exit_code()}};
}

}  // namespace switchyard::doctor
