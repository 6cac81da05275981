NAME          UNBDRAY
ROWS
 N  obj
 L  r0
 E  r1
 E  r2
COLUMNS
    x0  obj  -5  r0  1
    x1  obj  -6
    x2  r0  -1
    x3  obj  -1  r0  2
    x4  obj  5  r0  -4
    x5  obj  -5
    x6  obj  4
    x6  r1  1
    x6  r2  1
    M0  'MARKER'  'INTORG'
    x7  obj  1
    x7  r1  -3
    M1  'MARKER'  'INTEND'
    x8  obj  2
    x9  obj  -5
    x10  obj  2
    x10  r2  -3
RHS
    rhs1  r0  2
    rhs1  r2  2
BOUNDS
    UP  bnd1  x0  -1
    LO  bnd1  x0  -4
    FR  bnd1  x1
    UP  bnd1  x2  -1
    LO  bnd1  x3  2
    UP  bnd1  x4  9
    LO  bnd1  x4  1
    LO  bnd1  x5  -5
    LI  bnd1  x6  -2
    UI  bnd1  x6  4
    FR  bnd1  x7
    LO  bnd1  x8  1
    UI  bnd1  x9  0
    MI  bnd1  x9
    UI  bnd1  x10  2
    MI  bnd1  x10
ENDATA
