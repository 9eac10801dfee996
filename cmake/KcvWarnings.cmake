# -Wall -Wextra -Werror on kcv's own targets only (never on third-party code).
function(kcv_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-missing-field-initializers)
endfunction()
