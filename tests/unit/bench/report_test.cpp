#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>

#include "bench/report_html.h"
#include "bench/report_json.h"
#include "bench/report_table.h"

namespace switchyard::bench {
namespace {

namespace pt = boost::property_tree;

RunReport sample_run(const std::string& model, double scale, bool simulated) {
  RunReport run;
  run.endpoint = "http://127.0.0.1:8080";
  run.model = model;
  run.started_at = "2025-01-01T00:00:00Z";
  run.simulated = simulated;
  run.method.input_len = 2048;
  run.method.output_len = 256;
  run.method.description = "random <vocabulary> & forced \"output\"";
  for (int n : {1, 2, 4, 8}) {
    StepReport s;
    s.concurrency = n;
    s.requests = s.succeeded = 4 * n;
    s.output_tokens_per_s = 60 * n * scale;
    s.ttft_ms.p50 = 100.0 * n;
    s.ttft_ms.p90 = 150.0 * n;
    s.ttft_ms.p99 = 200.0 * n;
    s.ttft_ms.mean = 120.0 * n;
    s.ttft_ms.count = 4u * n;
    s.itl_ms = summarize({15, 16, 18, 25});
    s.self_reported_tokens_per_s = 600;
    s.inflated = n == 8;
    s.self_report_ratio = n == 8 ? 2.5 : 1.0;
    run.steps.push_back(s);
  }
  RequestRecord r;
  r.ttft_ms = 100;
  r.completion_tokens = 256;
  run.requests.push_back(r);
  return run;
}

// Every element of the tree whose attribute `name` is `value`, depth first.
void collect(const pt::ptree& tree, const std::string& attr, const std::string& value,
             std::vector<const pt::ptree*>& out) {
  for (const auto& [key, child] : tree) {
    if (key == "<xmlattr>") continue;
    if (child.get<std::string>("<xmlattr>." + attr, "") == value) out.push_back(&child);
    collect(child, attr, value, out);
  }
}

TEST(ReportJson, RoundTripsTheSteps) {
  const auto run = sample_run("qwen", 1, true);
  const std::string text = run_to_json(run);
  for (const char* field :
       {"\"endpoint\"", "\"model\"", "\"method\"", "\"started_at\"", "\"steps\"", "\"requests\"",
        "\"output_tokens_per_s\"", "\"ttft_ms\"", "\"self_reported_tokens_per_s\""})
    EXPECT_NE(text.find(field), std::string::npos) << field;
  auto back = run_from_json(text, "a.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->model, "qwen");
  EXPECT_TRUE(back->simulated);
  ASSERT_EQ(back->steps.size(), 4u);
  EXPECT_EQ(back->steps[3].concurrency, 8);
  EXPECT_DOUBLE_EQ(back->steps[3].output_tokens_per_s, 480);
  EXPECT_DOUBLE_EQ(back->steps[2].ttft_ms.p90, 600);
  EXPECT_FALSE(run_from_json("{}", "b.json"));
  EXPECT_FALSE(run_from_json("not json", "c.json"));
}

TEST(ReportHtml, IsWellFormedWithOneThroughputSeriesPerRun) {
  const std::vector<RunReport> runs{sample_run("replicas", 1, true), sample_run("tp2", 2, true),
                                    sample_run("other", 0.5, false)};
  const std::string html = render_html(runs, {"replicas.json", "tp2.json", "x<y>.json"});
  std::istringstream in(html);
  pt::ptree tree;
  ASSERT_NO_THROW(pt::read_xml(in, tree)) << html.substr(0, 400);

  std::vector<const pt::ptree*> svgs;
  collect(tree, "class", "chart", svgs);
  // Over the sweep: tok/s, TTFT, ITL, TPOT, E2E, req/s; no distributions
  // (these runs carry no TTFT percentiles).
  ASSERT_EQ(svgs.size(), 6u);
  std::vector<const pt::ptree*> throughput;
  collect(*svgs[0], "class", "series", throughput);
  ASSERT_EQ(throughput.size(), runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i)
    EXPECT_EQ(throughput[i]->get<std::string>("<xmlattr>.data-run"), std::to_string(i));
  std::vector<const pt::ptree*> ttft;
  collect(*svgs[1], "class", "series", ttft);
  EXPECT_EQ(ttft.size(), 2 * runs.size());  // p50 and p99 per run
  EXPECT_NE(html.find("simulated engines"), std::string::npos);
  EXPECT_NE(html.find("x&lt;y&gt;.json"), std::string::npos);
}

// Text of every <text> element under `tree` (their tspans included).
void texts(const pt::ptree& tree, std::vector<std::string>& out) {
  for (const auto& [key, child] : tree) {
    if (key == "text") {
      std::string t = child.get_value<std::string>();
      for (const auto& [k, span] : child)
        if (k == "tspan") t += span.get_value<std::string>();
      out.push_back(t);
    }
    if (key != "<xmlattr>") texts(child, out);
  }
}

pt::ptree parse(const std::string& html) {
  std::istringstream in(html);
  pt::ptree tree;
  pt::read_xml(in, tree);
  return tree;
}

TEST(ReportHtml, SweepAxesHaveRoundTicks) {
  // Output tok/s peaks at 960 (tp2 at N=8): the y axis runs 0, 200, …, 1000.
  const auto tree = parse(render_html({sample_run("a", 1, false), sample_run("b", 2, false)}, {}));
  std::vector<const pt::ptree*> svgs;
  collect(tree, "class", "chart", svgs);
  ASSERT_FALSE(svgs.empty());
  std::vector<std::string> labels;
  texts(*svgs[0], labels);
  for (const char* tick : {"0", "200", "400", "600", "800", "1000", "1", "2", "4", "8"})
    EXPECT_NE(std::find(labels.begin(), labels.end(), tick), labels.end()) << tick;
  EXPECT_EQ(std::find(labels.begin(), labels.end(), "1056"), labels.end());  // no 1.1 × max
}

TEST(ReportHtml, EachStepsLatencyDistributionsAsCdfs) {
  auto run = sample_run("m", 1, false);
  for (auto& s : run.steps) {
    std::vector<double> ttft;
    for (int i = 1; i <= 20; ++i) ttft.push_back(10.0 * i * s.concurrency);
    s.ttft_ms = summarize(ttft);
    s.tpot_ms = summarize({5, 6, 7});
    s.e2e_ms = summarize({300, 400});
  }
  const auto tree = parse(render_html({run}, {"with distributions"}));
  std::vector<const pt::ptree*> blocks;
  collect(tree, "class", "distributions", blocks);
  ASSERT_EQ(blocks.size(), 1u);
  std::vector<const pt::ptree*> cdfs;
  collect(*blocks[0], "class", "chart", cdfs);
  ASSERT_EQ(cdfs.size(), 4u);  // TTFT, ITL, TPOT, E2E
  std::vector<const pt::ptree*> steps;
  collect(*cdfs[0], "class", "series", steps);
  ASSERT_EQ(steps.size(), run.steps.size());
  EXPECT_EQ(steps[3]->get<std::string>("<xmlattr>.data-name"), "N=8");
  std::vector<std::string> labels;
  texts(*cdfs[0], labels);
  EXPECT_NE(std::find(labels.begin(), labels.end(), "1.0"), labels.end());  // y: fraction to 1
}

TEST(ReportHtml, LongLabelsWrapInsideTheChart) {
  const std::string label(150, 'L');
  const auto tree = parse(render_html({sample_run("m", 1, false)}, {label}));
  std::vector<const pt::ptree*> svgs;
  collect(tree, "class", "chart", svgs);
  ASSERT_FALSE(svgs.empty());
  std::vector<const pt::ptree*> legend;
  collect(*svgs[0], "class", "legend", legend);
  ASSERT_EQ(legend.size(), 1u);
  std::size_t chars = 0, lines = 0;
  for (const auto& [key, span] : *legend[0])
    if (key == "tspan") {
      ++lines;
      chars += span.get_value<std::string>().size();
    }
  EXPECT_GE(lines, 2u);
  EXPECT_EQ(chars, label.size());
}

TEST(ReportHtml, NeedleGridAsAHeatMap) {
  NeedleGrid g;
  g.label = "needle run";
  g.endpoint = "http://e";
  g.model = "m";
  g.contexts = {4096, 32768};
  g.depths = {10, 90};
  g.scores = {{{4096, 10}, 1.0}, {{4096, 90}, 0.5}, {{32768, 10}, 0.0}};
  const auto tree = parse(render_html({}, {}, {g}));
  std::vector<const pt::ptree*> maps;
  collect(tree, "class", "chart heatmap", maps);
  ASSERT_EQ(maps.size(), 1u);
  std::vector<const pt::ptree*> cells;
  collect(*maps[0], "class", "cell", cells);
  ASSERT_EQ(cells.size(), 3u);  // the missing (32768, 90) is an empty rect
  EXPECT_EQ(cells[0]->get<std::string>("<xmlattr>.data-score"), "1.000");
  EXPECT_EQ(cells[0]->get<std::string>("rect.<xmlattr>.fill"), score_color(1.0));
  std::vector<const pt::ptree*> empty;
  collect(*maps[0], "class", "cell empty", empty);
  EXPECT_EQ(empty.size(), 1u);
}

TEST(ReportJson, KeepsTheLabelAndTheLatencyPercentiles) {
  auto run = sample_run("m", 1, false);
  run.label = "tp2 fp8";
  run.steps[0].ttft_ms = summarize({1, 2, 3, 4});
  auto back = run_from_json(run_to_json(run), "a.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->label, "tp2 fp8");
  ASSERT_EQ(back->steps[0].ttft_ms.percentiles.size(), 101u);
  EXPECT_DOUBLE_EQ(back->steps[0].ttft_ms.percentiles[50], 2.5);
  const auto& itl = run.steps[0].itl_ms.percentiles;
  ASSERT_EQ(back->steps[0].itl_ms.percentiles.size(), itl.size());
  for (std::size_t i = 0; i < itl.size(); ++i)
    EXPECT_NEAR(back->steps[0].itl_ms.percentiles[i], itl[i], 1e-9 * itl[i]) << i;
}

TEST(ReportHtml, RealEnginesAreNotLabelledSimulated) {
  const std::string html = render_html({sample_run("m", 1, false)}, {""});
  EXPECT_EQ(html.find("simulated"), std::string::npos);
}

TEST(ReportTable, FlagsInflationAndErrors) {
  auto run = sample_run("m", 1, false);
  run.steps[1].errors["http_503"] = 2;
  run.steps[1].error_examples["http_503"] = "queue full";
  const std::string table = format_table(run);
  EXPECT_NE(table.find("INFLATED"), std::string::npos);
  EXPECT_NE(table.find("2.50x"), std::string::npos);
  EXPECT_NE(table.find("http_503=2"), std::string::npos);
  EXPECT_NE(table.find("queue full"), std::string::npos);
}

TEST(ReportTable, NamesEveryPromptOffItsTarget) {
  auto run = sample_run("m", 1, false);
  run.steps[0].prompt_checked = 8;
  run.steps[0].prompt_off_target = 3;
  run.steps[0].worst_prompt_tokens = 255;
  run.steps[0].worst_prompt_target = 256;
  const std::string table = format_table(run);
  EXPECT_NE(table.find("at N=1: 3 of 8 request(s) had a prompt other than 256 tokens"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("the furthest off was 255"), std::string::npos) << table;
  run.method.workload = "agent";
  EXPECT_NE(format_table(run).find("in turn 1: 3 of 8"), std::string::npos);
}

TEST(ReportTable, OpenLoopShowsOfferedBesideAchievedRate) {
  auto run = sample_run("m", 1, false);
  run.method.loop = "open";
  run.steps.resize(1);
  run.steps[0].rate = 20;
  run.steps[0].achieved_rate = 18.734;
  run.steps[0].concurrency = 3;
  const std::string table = format_table(run);
  EXPECT_NE(table.find("offered achieved peak N"), std::string::npos) << table;
  EXPECT_NE(table.find("   20/s  18.73/s      3"), std::string::npos) << table;
}

TEST(ReportJson, NoNegativeWarmupWhenItIsOnePerWorker) {
  auto run = sample_run("m", 1, false);
  run.method.warmup = -1;
  run.steps[2].warmup = 4;
  const std::string text = run_to_json(run);
  EXPECT_EQ(text.find("\"warmup\":-1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"warmup\":null"), std::string::npos);
  EXPECT_NE(text.find("\"warmup\":4"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::bench
