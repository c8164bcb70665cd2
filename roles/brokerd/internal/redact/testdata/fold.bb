bxk_live
_9fQ2mZ7
rT4wY8nL
1pK6vH3s
