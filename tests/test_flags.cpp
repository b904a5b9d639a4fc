#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/finite_guard.hpp"
#include "examples/common/flags.hpp"
#include "examples/common/report.hpp"
#include "tests/helpers.hpp"

using namespace attn;

// The message of the std::invalid_argument a copy of `flags` throws when
// parsing args (after the program's name), or "" when it accepts them.
static std::string parse_error(const FlagParser& flags, std::vector<const char*> args) {
    args.insert(args.begin(), "trainer");
    try {
        FlagParser(flags).parse(static_cast<int>(args.size()), args.data());
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST_CASE("flags: common and own flags, both spellings, switches, errors") {
    CommonFlags common;
    std::string attention = "additive";
    double lr = 1e-3;
    FlagParser flags("seq2seq", "test");
    flags.add_common(common, "dates | a file");
    flags.add("--attention", &attention, "score");
    flags.add("--lr", &lr, "learning rate");
    const char* argv[] = {"seq2seq", "--epochs", "3", "--attention=dot", "--no-save", "--resume", "--lr", "0.5", "word"};
    REQUIRE(flags.parse(9, argv));
    CHECK(common.epochs == 3);
    CHECK(attention == "dot");
    CHECK_FALSE(common.save);
    CHECK(common.resume);
    CHECK(lr == 0.5);
    REQUIRE(flags.positional().size() == 1);
    CHECK(flags.positional()[0] == "word");

    // The trainer prefixes its name ("seq2seq: ..."); the parser's message names the flag.
    const char* bad[] = {"seq2seq", "--epochs", "ten"};
    CHECK_THROWS_WITH_AS(FlagParser(flags).parse(3, bad), "--epochs expects a whole number, got 'ten'",
                         std::invalid_argument);
    const char* unknown[] = {"seq2seq", "--epoch", "3"};
    CHECK_THROWS_WITH_AS(flags.parse(3, unknown), "unknown flag --epoch; did you mean --epochs?",
                         std::invalid_argument);
    const char* far[] = {"seq2seq", "--colour", "red"};
    CHECK_THROWS_WITH_AS(flags.parse(3, far), "unknown flag --colour (see --help)", std::invalid_argument);
    const char* missing[] = {"seq2seq", "--seed"};
    CHECK_THROWS_WITH_AS(flags.parse(2, missing), "--seed needs a value", std::invalid_argument);
    CHECK(flags.usage().find("--attention TEXT") != std::string::npos);
}

// Each of these once started a run that crashed (--batch 0: a division by
// zero), trained nothing and exited 0 (--epochs -1), wrote to /seq2seq
// (--out ""), or quietly became 1 (--threads 4294967297). A flag is checked
// as it is parsed, before any work.
TEST_CASE("flags: ranges are checked as the flags are parsed") {
    CommonFlags common;
    int64_t batch = 32;
    double lr = 1e-3, dropout = 0;
    FlagParser flags("trainer", "test");
    flags.add_common(common, "dates | a file");
    flags.add("--batch", &batch, "examples per step", 1);
    flags.add("--lr", &lr, "learning rate", 0);
    flags.add("--dropout", &dropout, "dropout", 0, 0.99);
    auto error = [&](std::vector<const char*> args) { return parse_error(flags, std::move(args)); };
    CHECK(error({"--batch", "0"}) == "--batch must be at least 1, got 0");
    CHECK(error({"--batch=-1"}) == "--batch must be at least 1, got -1");
    CHECK(error({"--epochs", "-1"}) == "--epochs must be at least 1, got -1");
    CHECK(error({"--steps", "-5"}) == "--steps must be at least 0, got -5");
    CHECK(error({"--threads", "4294967297"}) == "--threads must be at most 1024, got 4294967297");
    CHECK(error({"--out", ""}) == "--out: an empty path");
    CHECK(error({"--out="}) == "--out: an empty path");
    CHECK(error({"--dropout", "1.5"}) == "--dropout must be at most 0.99, got 1.5");
    CHECK(error({"--lr", "nan"}) == "--lr expects a finite number, got 'nan'");
    CHECK(error({"--lr", "1e999"}) == "--lr expects a finite number, got '1e999'");
    CHECK(error({"--lr", "-0.1"}) == "--lr must be at least 0, got -0.1");
    // A refused value leaves its variable as it was; the ends of a range are allowed.
    CHECK(batch == 32);
    CHECK(error({"--batch", "1", "--dropout", "0.99", "--threads", "1024", "--steps", "0"}).empty());
    CHECK(batch == 1);
    CHECK(dropout == 0.99);
}

// --ema 1 was refused with "must be at most 1, got 1" (the bound 0.9999999
// printed as 1): the rule is the half-open [0, 1), and the message says so.
TEST_CASE("flags: --ema is in [0, 1) and says so") {
    CommonFlags common;
    FlagParser flags("trainer", "test");
    flags.add_common(common, "dates");
    auto error = [&](std::vector<const char*> args) { return parse_error(flags, std::move(args)); };
    CHECK(error({"--ema", "1"}) == "--ema must be in [0, 1) (0 = off), got 1");
    CHECK(error({"--ema=1.5"}) == "--ema must be in [0, 1) (0 = off), got 1.5");
    CHECK(error({"--ema", "-0.1"}) == "--ema must be in [0, 1) (0 = off), got -0.1");
    CHECK(error({"--ema", "nan"}) == "--ema expects a finite number, got 'nan'");
    CHECK(error({"--ema", "0"}).empty());
    CHECK(error({"--ema", "0.99999999"}).empty());  // under 1 is allowed, however close
    CHECK(common.ema == 0.99999999);  // a refused value leaves the last accepted one
}

// A path flag given an empty value once did something else than asked:
// `--svg ''` drew nothing, `--checkpoint ''` quietly used the default. An
// output path that is not a regular file (a device, a FIFO, a directory, a
// symbolic link) is refused before any work: run as root, `--svg /dev/null`
// replaced /dev/null. /dev/null is only looked at here (its type), never written.
TEST_CASE("flags: a path flag refuses an empty value; an output path refuses what is not a regular file") {
    PredictFlags predict;
    std::string train;
    FlagParser flags("trainer", "test");
    flags.add_predict(predict, "predict");
    flags.add_path("--train", &train, "lexicon", FlagParser::PathUse::input);
    auto error = [&](std::vector<const char*> args) { return parse_error(flags, std::move(args)); };
    CHECK(error({"--svg", ""}) == "--svg: an empty path");
    CHECK(error({"--checkpoint="}) == "--checkpoint: an empty path");
    CHECK(error({"--dump-reference", ""}) == "--dump-reference: an empty path");
    CHECK(error({"--train", ""}) == "--train: an empty path");

    const std::string why = ", not a regular file; give a file path";
    CHECK(error({"--svg", "/dev/null"}) == "--svg /dev/null: is a character device" + why);
    testing::TempDir dir("flags_outputs");
    const std::string fifo = dir / "fifo", link = dir / "link", plain = dir / "plain.svg";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::ofstream(plain) << "<svg/>";
    std::filesystem::create_symlink(plain, link);
    CHECK(error({"--svg", fifo.c_str()}) == "--svg " + fifo + ": is a FIFO (named pipe)" + why);
    CHECK(error({"--dump-reference", dir.path.c_str()}) == "--dump-reference " + dir.path + ": is a directory" + why);
    CHECK(error({"--svg", link.c_str()}) == "--svg " + link + ": is a symbolic link" + why);
    // --out is a folder: one that exists must be one (or a link to one).
    CommonFlags common;
    FlagParser trainer("trainer", "test");
    trainer.add_common(common, "dates");
    const char* out_null[] = {"trainer", "--out", "/dev/null"};
    CHECK_THROWS_WITH_AS(trainer.parse(3, out_null),
                         "--out /dev/null: is a character device, not a directory; give a folder",
                         std::invalid_argument);
    const std::string out_fifo = "--out " + fifo + ": is a FIFO (named pipe), not a directory; give a folder";
    const char* out_pipe[] = {"trainer", "--out", fifo.c_str()};
    CHECK_THROWS_WITH_AS(trainer.parse(3, out_pipe), out_fifo.c_str(), std::invalid_argument);
    std::filesystem::create_directory(dir / "runs");
    std::filesystem::create_directory_symlink(dir / "runs", dir / "runs-link");
    const std::string runs_link = dir / "runs-link", fresh = dir / "fresh";
    const char* out_ok[] = {"trainer", "--out", runs_link.c_str(), "--out", fresh.c_str()};
    CHECK(trainer.parse(5, out_ok));
    // A regular file, a new name, and an input path of any kind are fine.
    CHECK(error({"--svg", plain.c_str()}).empty());
    CHECK(error({"--dump-reference", (dir / "new.safetensors").c_str()}).empty());
    CHECK(error({"--checkpoint", link.c_str(), "--train", "/dev/null"}).empty());
}

// Every form a flag may be written in, and the forms that must be refused,
// one by one: a flag that takes a value has no value-less form (--epochs at
// the end, --epochs=, --no-epochs), and a switch's --no- form takes no value.
TEST_CASE("flags: the forms of a valued flag and of a switch, each written out") {
    CommonFlags common;
    FlagParser flags("trainer", "test");
    flags.add_common(common, "dates");
    auto parse = [&](std::vector<const char*> args) { return parse_error(flags, std::move(args)); };
    // a valued flag: "--epochs 3" and "--epochs=3"; the last one given wins
    CHECK(parse({"--epochs", "3"}).empty());
    CHECK(common.epochs == 3);
    CHECK(parse({"--epochs=4"}).empty());
    CHECK(common.epochs == 4);
    CHECK(parse({"--epochs=5", "--epochs", "6"}).empty());
    CHECK(common.epochs == 6);
    // ...and no form without its value
    CHECK(parse({"--epochs"}) == "--epochs needs a value");
    CHECK(parse({"--epochs="}) == "--epochs expects a whole number, got ''");
    CHECK(parse({"--no-epochs"}) == "unknown flag --no-epochs (see --help)");
    CHECK(common.epochs == 6);
    // a switch: on, off, and "=true|false"; its --no- form takes no value
    common.save = false;
    CHECK(parse({"--save"}).empty());
    CHECK(common.save);
    CHECK(parse({"--no-save"}).empty());
    CHECK_FALSE(common.save);
    CHECK(parse({"--save=true"}).empty());
    CHECK(common.save);
    CHECK(parse({"--no-save=true"}) == "unknown flag --no-save (see --help)");
    CHECK(common.save);
    CHECK(parse({"--save", "false"}).empty());  // a switch takes no next argument: "false" is positional
    CHECK(common.save);
}

// Each of these was once accepted: --save=no turned saving on; --epochs
// 9223372036854775807 overflowed when multiplied by the batches of an epoch;
// "--epochs 1 5" trained one epoch and ignored the 5.
TEST_CASE("flags: a switch takes true or false only; numbers have bounds; a stray argument is refused") {
    CommonFlags common;
    int64_t hidden = 64;
    FlagParser flags("trainer", "test");
    flags.add_common(common, "dates");
    flags.add("--hidden", &hidden, "width", 1, kMaxWidth);
    auto parse = [&](std::vector<const char*> args) { return parse_error(flags, std::move(args)); };
    CHECK(parse({"--save=no"}).empty());
    CHECK_FALSE(common.save);
    CHECK(parse({"--save=yes"}).empty());
    CHECK(common.save);
    CHECK(parse({"--save=0", "--resume=1"}).empty());
    CHECK_FALSE(common.save);
    CHECK(common.resume);
    CHECK(parse({"--save=maybe"}) == "--save is a switch: --save or --no-save (or --save=true|false), got 'maybe'");
    CHECK_FALSE(common.save);
    CHECK(parse({"--epochs", "9223372036854775807"}) == "--epochs must be at most 1000000, got 9223372036854775807");
    CHECK(parse({"--steps", "9223372036854775807"}) == "--steps must be at most 1000000000, got 9223372036854775807");
    CHECK(parse({"--hidden", "4611686018427387904"}) == "--hidden must be at most 16384, got 4611686018427387904");
    CHECK(parse({"--seed", "9223372036854775807"}).empty());  // a seed may be any non-negative number
    CHECK(parse({"--seed", "-1"}) == "--seed must be at least 0, got -1");
    CHECK(parse({"--epochs", "1000000", "--hidden", "16384"}).empty());  // the ends of the ranges
    CHECK(hidden == 16384);
    // positional arguments: kept for --predict, refused by a run that reads none
    FlagParser run("trainer", "test");
    run.add_common(common, "dates");
    const char* stray[] = {"trainer", "--epochs", "1", "5"};
    REQUIRE(run.parse(4, stray));
    CHECK(common.epochs == 1);
    CHECK_THROWS_WITH_AS(run.refuse_positional("inputs are read only with --predict"),
                         "unexpected argument '5' (inputs are read only with --predict)", std::invalid_argument);
    FlagParser clean("trainer", "test");
    clean.add_common(common, "dates");
    const char* none[] = {"trainer", "--epochs", "1"};
    REQUIRE(clean.parse(3, none));
    CHECK_NOTHROW(clean.refuse_positional("inputs are read only with --predict"));
    // --help says what a default of 0 means
    clean.describe_default("--epochs", "the task's");
    CHECK(clean.usage().find("passes over the training data (default: the task's)") != std::string::npos);
    CHECK_THROWS_AS(clean.describe_default("--epoch", "x"), std::invalid_argument);
}

// --help once showed "(now: 0)" and never listed what --data accepts; a
// choice flag took any text and failed later, if at all.
TEST_CASE("flags: --help lists the --data choices and the declared defaults; a choice flag refuses the rest") {
    CommonFlags common{.data = "dates", .epochs = 2, .schedule = "cosine"};
    FlagParser flags("trainer", "test");
    flags.add_common(common, "dates (built in) | a lexicon file");
    std::string kind = "soft";
    flags.add_choice("--align", &kind, {"soft", "hard"}, "the alignment");
    const char* argv[] = {"trainer", "--epochs", "7", "--align", "hard"};
    REQUIRE(flags.parse(5, argv));
    CHECK(kind == "hard");
    const std::string help = flags.usage();
    CHECK(help.find("the data set: dates (built in) | a lexicon file (default: dates)") != std::string::npos);
    CHECK(help.find("passes over the training data (default: 2)") != std::string::npos);  // not 7: the default
    CHECK(help.find("the alignment: soft | hard (default: soft)") != std::string::npos);
    CHECK(help.find("(default: cosine)") != std::string::npos);
    CHECK(help.find("now:") == std::string::npos);
    const char* bad[] = {"trainer", "--align", "gumbel"};
    CHECK_THROWS_WITH_AS(flags.parse(3, bad), "--align expects soft | hard, got 'gumbel'", std::invalid_argument);
    const char* schedule[] = {"trainer", "--schedule", "linear"};
    CHECK_THROWS_WITH_AS(flags.parse(3, schedule), "--schedule expects constant | cosine | noam, got 'linear'",
                         std::invalid_argument);
    CHECK(kind == "hard");
}

TEST_CASE("report parts: each trainer adds its part; the page holds all, in a fixed order") {
    namespace fs = std::filesystem;
    const attn::testing::TempDir tmp("report_parts");
    const fs::path dir = tmp.path;
    HtmlReport docs("docclass");
    docs.set_anchor_prefix("docclass-").section("docclass results").paragraph("accuracy 0.9");
    HtmlReport dates("seq2seq");
    dates.set_anchor_prefix("seq2seq-").section("seq2seq results").paragraph("exact 0.99");
    write_report_part(dir.string(), "docclass", docs);
    write_report_part(dir.string(), "seq2seq", dates);
    std::ifstream in(dir / "report.html");
    const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t s = page.find("seq2seq results"), d = page.find("docclass results");
    REQUIRE(s != std::string::npos);
    REQUIRE(d != std::string::npos);
    CHECK(s < d);  // seq2seq comes first whatever order they ran in
    CHECK(page.find("id=\"docclass-s1\"") != std::string::npos);
    // Running one trainer again replaces its part, not the other's.
    HtmlReport dates2("seq2seq");
    dates2.set_anchor_prefix("seq2seq-").section("seq2seq rerun");
    write_report_part(dir.string(), "seq2seq", dates2);
    std::ifstream in2(dir / "report.html");
    const std::string page2((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
    CHECK(page2.find("seq2seq results") == std::string::npos);
    CHECK(page2.find("seq2seq rerun") != std::string::npos);
    CHECK(page2.find("docclass results") != std::string::npos);
    // A trainer's run of another kind follows its own part, before the next trainer's.
    HtmlReport soft("caption"), hard("caption-hard");
    soft.set_anchor_prefix("caption-").section("soft captions");
    hard.set_anchor_prefix("caption-hard-").section("hard captions");
    write_report_part(dir.string(), "caption-hard", hard);
    write_report_part(dir.string(), "caption", soft);
    std::ifstream in3(dir / "report.html");
    const std::string page3((std::istreambuf_iterator<char>(in3)), std::istreambuf_iterator<char>());
    const size_t q = page3.find("seq2seq rerun"), c = page3.find("soft captions"), h = page3.find("hard captions"),
                 d3 = page3.find("docclass results");
    CHECK(q < c);
    CHECK(c < h);
    CHECK(h < d3);
    fs::remove_all(dir);
}

// --lr 1e30 made the loss NaN; the trainers went on, exited 0 and saved
// all-NaN checkpoints. The guard stops at the first non-finite loss or
// gradient norm, before the update, naming the step and the last good loss.
TEST_CASE("finite guard: a non-finite loss or gradient stops training, naming the step and the last finite loss") {
    FiniteGuard guard;
    guard.check(0, 2.5, 1.0);
    guard.check(1, 2.25, 3.0);
    CHECK(guard.last_good_step() == 1);
    CHECK_THROWS_WITH_AS(guard.check(2, std::nan(""), 1.0),
                         doctest::Contains("step 2: the loss is nan (the last finite loss was 2.25 at step 1)"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(guard.check(2, 2.0, HUGE_VAL),
                         doctest::Contains("step 2: the gradient norm is inf (the loss 2)"), std::runtime_error);
    CHECK_THROWS_WITH_AS(guard.check(2, -HUGE_VAL, 1.0), doctest::Contains("the loss is -inf"), std::runtime_error);
    FiniteGuard fresh;
    CHECK_THROWS_WITH_AS(fresh.check(0, std::nan(""), std::nan("")),
                         doctest::Contains("step 0: the loss is nan at the first step of this run"),
                         std::runtime_error);
}

TEST_CASE("error_message: a trainer's name before the error, once") {
    CHECK(error_message("seq2seq", "no such file") == "seq2seq: no such file");
    // A message of the example's own code names it already: not twice.
    CHECK(error_message("seq2seq", "seq2seq: --train x: no such file") == "seq2seq: --train x: no such file");
    CHECK(error_message("seq2seq", "seq2seq --ensemble: a.safetensors ...") == "seq2seq --ensemble: a.safetensors ...");
    // Another word that begins with the name is not the name.
    CHECK(error_message("caption", "captions file: bad line") == "caption: captions file: bad line");
    CHECK(error_message("zoo", "zoo") == "zoo: zoo");
}
