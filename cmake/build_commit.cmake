# Run at build time (cmake -DSRC=<source dir> -DOUT=<header> -P build_commit.cmake):
# writes OUT defining SINEW_BUILD_COMMIT, the short commit of SRC's checkout
# ("-dirty" when tracked files other than bench/results/ differ from it: a
# long check logging there does not dirty the next build; "unknown" without
# git), and
# rewrites it only when that changes, so an unchanged checkout rebuilds nothing.
# Results name the library they measured with it (sinew::build_commit()):
# a run's checkout need not be the one its binaries were built from.
set(commit "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" rev-parse --short HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND NOT head STREQUAL "")
    set(commit "${head}")
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SRC}" status --porcelain --untracked-files=no -- . ":(exclude)bench/results"
                    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT changes STREQUAL "")
      string(APPEND commit "-dirty")
    endif()
  endif()
endif()
set(text "#define SINEW_BUILD_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
