// What one doctor run found, and its two renderings: text for a person and
// JSON for machines (fields documented in docs/doctor.md).
#pragma once

#include <boost/json/object.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "advisor/backend_checks.h"
#include "advisor/finding.h"
#include "doctor/box_scan.h"

namespace switchyard::doctor {

using advisor::BackendReport;
using advisor::count_findings;
using advisor::Engine;
using advisor::Finding;
using advisor::Measurement;
using advisor::Severity;

struct DoctorReport {
  BoxScan box;
  std::vector<Finding> box_findings;
  std::vector<Finding> fleet_notes;  // instances doctor could not check
  std::vector<BackendReport> backends;
  std::optional<std::string> nvidia_smi_topology;

  // Box, fleet and backend findings in that order.
  std::vector<Finding> findings() const;
  // 1 when any warning was found, else 0.
  int exit_code() const;
};

void write_text(const DoctorReport& report, std::ostream& out);
boost::json::object to_json(const DoctorReport& report);

}  // namespace switchyard::doctor
