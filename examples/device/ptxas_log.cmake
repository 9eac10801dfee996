# Compiles one CUDA file to a cubin with `-Xptxas -v` and stores everything nvcc printed (ptxas
# reports on stderr) in LOG: the resource report gate RES-02 parses. Run with cmake -P so that
# capturing stderr does not depend on the build tool's shell.
# Inputs: NVCC, SRC, ARCH, CUBIN, LOG, EXTRA (extra nvcc flags, may be empty).
get_filename_component(_dir ${LOG} DIRECTORY)
file(MAKE_DIRECTORY ${_dir})
execute_process(COMMAND ${NVCC} -arch=${ARCH} -cubin -Xptxas -v ${EXTRA} -o ${CUBIN} ${SRC}
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed (${_rc}) on ${SRC}:\n${_out}${_err}")
endif()
file(WRITE ${LOG} "${_out}${_err}")
