NAME T
ROWS
 N obj
 L c1
COLUMNS
 x obj 1 c1 1
 x c1 2
ENDATA
