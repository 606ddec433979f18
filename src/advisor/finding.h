// A finding: one thing doctor or the advisor has to say, in plain words, with how serious it is.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace switchyard::advisor {

// A note informs; a warning means something is wrong or could not be checked
// and makes doctor exit 1.
enum class Severity { note, warning };

struct Finding {
  Severity severity = Severity::note;
  std::string check;    // stable id for machines, e.g. "pcie.atomics", "backend.preemptions"
  std::string subject;  // what it is about: a PCI address, a backend URL, "box"
  std::string message;  // one paragraph for a person, ready to print
};

inline const char* to_string(Severity severity) {
  return severity == Severity::warning ? "warning" : "note";
}

inline long count_findings(const std::vector<Finding>& findings, Severity severity) {
  return std::count_if(findings.begin(), findings.end(),
                       [severity](const Finding& f) { return f.severity == severity; });
}

}  // namespace switchyard::advisor
