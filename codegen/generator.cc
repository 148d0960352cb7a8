#include "codegen/generator.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/Basic/FileManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Tooling/Tooling.h"
#include "codegen/clang_resource_dir.h"
#include "codegen/diagnostics.h"
#include "codegen/module_collector.h"
#include "codegen/module_emitter.h"
#include "codegen/parse_checks.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace kindling::codegen {
namespace {

// Collects and emits once the header is parsed; Sema (which formats the
// diagnostics' type arguments) is still alive then.
class GenerateConsumer : public clang::ASTConsumer {
 public:
  GenerateConsumer(const GeneratorOptions& options,
                   clang::Preprocessor& preprocessor,
                   clang::DiagnosticsEngine& diagnostics)
      : options_(options),
        preprocessor_(preprocessor),
        diagnostics_(diagnostics) {}

  void HandleTranslationUnit(clang::ASTContext& context) override {
    if (diagnostics_.hasErrorOccurred()) return;
    GeneratedHeader header;
    header.source_path = options_.input_path;
    header.include_path = options_.include_path.empty() ? options_.input_path
                                                        : options_.include_path;
    CollectModules(context, preprocessor_, diagnostics_,
                   options_.sibling_includes, header);
    if (diagnostics_.hasErrorOccurred()) return;
    Write(EmitHeader(header));
  }

 private:
  void Write(const std::string& text) {
    std::error_code error;
    llvm::raw_fd_ostream out(options_.output_path, error,
                             llvm::sys::fs::OF_None);
    if (!error) {
      out << text;
      out.close();
      error = out.error();
    }
    if (error) {
      const unsigned id = diagnostics_.getCustomDiagID(
          clang::DiagnosticsEngine::Error, "cannot write '%0': %1");
      diagnostics_.Report(id) << options_.output_path << error.message();
    }
  }

  const GeneratorOptions& options_;
  clang::Preprocessor& preprocessor_;
  clang::DiagnosticsEngine& diagnostics_;
};

class GenerateAction : public clang::ASTFrontendAction {
 public:
  explicit GenerateAction(const GeneratorOptions& options)
      : options_(options) {}

 protected:
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(
      clang::CompilerInstance& compiler, llvm::StringRef /*file*/) override {
    parse_diagnostics_ =
        std::make_unique<Diagnostics>(compiler.getDiagnostics());
    InstallParseChecks(compiler.getPreprocessor(), *parse_diagnostics_,
                       compiler.getDiagnostics());
    return std::make_unique<GenerateConsumer>(
        options_, compiler.getPreprocessor(), compiler.getDiagnostics());
  }

 private:
  const GeneratorOptions& options_;
  // What the parse checks report through; lives as long as the parse.
  std::unique_ptr<Diagnostics> parse_diagnostics_;
};

bool HasFlag(const std::vector<std::string>& flags, llvm::StringRef prefix) {
  for (const std::string& flag : flags) {
    if (llvm::StringRef(flag).startswith(prefix)) return true;
  }
  return false;
}

// The compiler command: the user's flags, a syntax-only C++ parse, and
// `resource_dir`, the builtin headers (empty when the flags name their own).
std::vector<std::string> CommandLine(const GeneratorOptions& options,
                                     const std::string& resource_dir) {
  std::vector<std::string> command = {"clang++"};
  command.insert(command.end(), options.compiler_flags.begin(),
                 options.compiler_flags.end());
  if (!resource_dir.empty()) {
    command.push_back("-resource-dir=" + resource_dir);
  }
  if (!HasFlag(options.compiler_flags, "-x")) {
    command.push_back("-xc++-header");
  }
  if (!HasFlag(options.compiler_flags, "-std=")) {
    command.push_back("-std=c++20");
  }
  command.push_back("-fsyntax-only");
  command.push_back(options.input_path);
  return command;
}

// Reports `message` as an error without a location, in clang's format: for
// what goes wrong before the header is parsed.
void ReportSetupError(const std::string& message) {
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> options(
      new clang::DiagnosticOptions());
  clang::TextDiagnosticPrinter printer(llvm::errs(), options.get());
  clang::DiagnosticsEngine diagnostics(
      llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs>(
          new clang::DiagnosticIDs()),
      options, &printer, /*ShouldOwnClient=*/false);
  diagnostics.Report(
      diagnostics.getCustomDiagID(clang::DiagnosticsEngine::Error, "%0"))
      << message;
}

// Reports a missing header once instead of the driver's three follow-on
// errors.
bool CheckInputExists(const std::string& path) {
  if (llvm::sys::fs::exists(path)) return true;
  ReportSetupError("header '" + path + "' not found");
  return false;
}

}  // namespace

bool RunGenerator(const GeneratorOptions& options) {
  // A stale output from an earlier run must not outlive a failed one.
  llvm::sys::fs::remove(options.output_path);
  if (!CheckInputExists(options.input_path)) return false;
  // Without a -resource-dir of the caller's, the builtin headers of the
  // linked Clang: the driver would look next to the kindling-gen binary.
  std::string resource_dir;
  if (!HasFlag(options.compiler_flags, "-resource-dir")) {
    resource_dir = ClangResourceDir();
    if (const std::optional<std::string> problem =
            ResourceDirProblem(resource_dir)) {
      ReportSetupError(*problem);
      return false;
    }
  }
  llvm::IntrusiveRefCntPtr<clang::FileManager> files(new clang::FileManager(
      clang::FileSystemOptions(), llvm::vfs::getRealFileSystem()));
  clang::tooling::ToolInvocation invocation(
      CommandLine(options, resource_dir),
      std::make_unique<GenerateAction>(options), files.get());
  if (invocation.run()) return true;
  llvm::sys::fs::remove(options.output_path);
  return false;
}

}  // namespace kindling::codegen
