# Unpacks one gzip-compressed file: the build's copy of a shipped export (db/tuned/*.json.gz). Run as:
#   cmake -DGZIP=... -DINPUT=... -DOUTPUT=... -P gunzip_file.cmake
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND "${GZIP}" -dc "${INPUT}" OUTPUT_FILE "${OUTPUT}.tmp" RESULT_VARIABLE status
                ERROR_VARIABLE error)
if(NOT status EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "cannot unpack ${INPUT} (gzip exit ${status}): ${error}")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
