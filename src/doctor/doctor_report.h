// What one doctor run found, and its two renderings: text for a person and
// JSON for machines (fields documented in docs/doctor.md).
#pragma once

#include <boost/json/object.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "doctor/backend_checks.h"
#include "doctor/box_scan.h"
#include "doctor/finding.h"

namespace switchyard::doctor {

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
